package fake_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/runtime/fake"
)

func spec(name string, labels map[string]string) runtime.ContainerSpec {
	return runtime.ContainerSpec{Name: name, Image: "img:1", Labels: labels}
}

// next reads one event or fails after a deadline.
func next(t *testing.T, ch <-chan runtime.Event) runtime.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("event channel closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return runtime.Event{}
}

func waitState(t *testing.T, r *fake.Runtime, id string, cond func(runtime.ContainerState) bool) runtime.ContainerState {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := r.Inspect(context.Background(), id)
		if err != nil {
			t.Fatalf("inspect: %v", err)
		}
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("state never reached; last %+v", st)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLifecycleAndEvents(t *testing.T) {
	ctx := t.Context()
	r := fake.New(fake.WithProcess(func(ctx context.Context, p fake.Process) int {
		fmt.Fprintf(p.Stdout, "hello from %s\n", p.Spec.Name)
		<-ctx.Done()
		return 0
	}))
	evs, errc := r.Events(ctx, map[string]string{"app": "a"})
	id, err := r.Create(ctx, spec("c1", map[string]string{"app": "a"}))
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Inspect(ctx, "c1")
	if err != nil || st.ID != id || st.Status != "created" || st.Running {
		t.Fatalf("inspect by name after create: %+v %v", st, err)
	}
	if err := r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, evs); ev.Type != runtime.EventStart || ev.ID != id || ev.Labels["app"] != "a" {
		t.Fatalf("want start event, got %+v", ev)
	}
	waitState(t, r, id, func(s runtime.ContainerState) bool { return s.Running && !s.StartedAt.IsZero() })
	if err := r.Stop(ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, evs); ev.Type != runtime.EventDie || ev.ExitCode != 0 {
		t.Fatalf("want die(0), got %+v", ev)
	}
	if ev := next(t, evs); ev.Type != runtime.EventStop {
		t.Fatalf("want stop, got %+v", ev)
	}
	st, _ = r.Inspect(ctx, id)
	if st.Running || st.Status != "exited" || st.FinishedAt.IsZero() {
		t.Fatalf("after stop: %+v", st)
	}
	rc, err := r.Logs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	if string(b) != "hello from c1\n" {
		t.Fatalf("logs = %q", b)
	}
	if err := r.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, evs); ev.Type != runtime.EventDestroy {
		t.Fatalf("want destroy, got %+v", ev)
	}
	if _, err := r.Inspect(ctx, id); !runtime.IsNotFound(err) {
		t.Fatalf("inspect after remove: want NotFound, got %v", err)
	}
	if err := r.Remove(ctx, id); err != nil {
		t.Fatalf("second remove must be idempotent: %v", err)
	}
	if err := r.Start(ctx, id); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("start removed: %v", err)
	}
	select {
	case err := <-errc:
		t.Fatalf("unexpected stream error %v", err)
	default:
	}
}

func TestProcessExitCodeAndIgnoredSigterm(t *testing.T) {
	ctx := t.Context()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	r := fake.New(fake.WithProcess(func(ctx context.Context, p fake.Process) int {
		switch p.Spec.Cmd[0] {
		case "exit3":
			return 3
		case "stubborn": // ignores SIGTERM
			<-release
			return 0
		}
		<-ctx.Done()
		return 0
	}))
	id3, _ := r.Create(ctx, runtime.ContainerSpec{Name: "x3", Image: "i", Cmd: []string{"exit3"}})
	if err := r.Start(ctx, id3); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, r, id3, func(s runtime.ContainerState) bool { return s.Status == "exited" })
	if st.ExitCode != 3 {
		t.Fatalf("exit code %d, want 3", st.ExitCode)
	}
	ids, _ := r.Create(ctx, runtime.ContainerSpec{Name: "stub", Image: "i", Cmd: []string{"stubborn"}})
	if err := r.Start(ctx, ids); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.Stop(ctx, ids, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Fatalf("stop returned before grace: %v", el)
	}
	st, _ = r.Inspect(ctx, ids)
	if st.Running || st.ExitCode != fake.ExitKilled {
		t.Fatalf("stubborn container after grace: %+v", st)
	}
	// Restart is allowed, like Docker.
	if err := r.Start(ctx, id3); err != nil {
		t.Fatal(err)
	}
	waitState(t, r, id3, func(s runtime.ContainerState) bool { return s.Status == "exited" && s.ExitCode == 3 })
}

func TestListSelectorsSpecsAndDefaults(t *testing.T) {
	ctx := t.Context()
	r := fake.New()
	_, _ = r.Create(ctx, spec("a", map[string]string{"sup": "s1", "agent": "x"}))
	_, _ = r.Create(ctx, spec("b", map[string]string{"sup": "s1", "agent": "y"}))
	_, _ = r.Create(ctx, spec("c", map[string]string{"sup": "s2"}))
	if _, err := r.Create(ctx, spec("a", nil)); !errors.Is(err, runtime.ErrNameConflict) {
		t.Fatalf("duplicate name: want ErrNameConflict, got %v", err)
	}
	cases := []struct {
		sel  map[string]string
		want []string
	}{
		{nil, []string{"a", "b", "c"}},
		{map[string]string{"sup": "s1"}, []string{"a", "b"}},
		{map[string]string{"sup": "s1", "agent": "y"}, []string{"b"}},
		{map[string]string{"agent": ""}, []string{"a", "b"}},
		{map[string]string{"sup": "nope"}, nil},
	}
	for _, c := range cases {
		got, err := r.List(ctx, c.sel)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range got {
			names = append(names, s.Name)
		}
		if fmt.Sprint(names) != fmt.Sprint(c.want) {
			t.Errorf("List(%v) = %v, want %v", c.sel, names, c.want)
		}
	}
	specs := r.Specs()
	if len(specs) != 3 || specs[0].Network != runtime.NetworkNone {
		t.Fatalf("specs: %+v", specs)
	}
	// Recorded specs are copies: mutating the caller's map later does not leak in.
	lbl := map[string]string{"k": "v"}
	id, _ := r.Create(ctx, spec("d", lbl))
	lbl["k"] = "changed"
	if s, _ := r.Spec(id); s.Labels["k"] != "v" {
		t.Fatal("spec labels aliased the caller's map")
	}
}

func TestInjectedFailuresAndCrash(t *testing.T) {
	ctx := t.Context()
	r := fake.New()
	boom := errors.New("boom")
	r.FailNext(fake.OpCreate, boom)
	if _, err := r.Create(ctx, spec("a", nil)); !errors.Is(err, boom) {
		t.Fatalf("want injected error, got %v", err)
	}
	id, err := r.Create(ctx, spec("a", nil))
	if err != nil {
		t.Fatalf("injected error must be used once: %v", err)
	}
	r.FailNext(fake.OpPing, boom)
	if err := r.Ping(ctx); !errors.Is(err, boom) {
		t.Fatal("ping injection")
	}
	if err := r.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	evs, _ := r.Events(ctx, nil)
	_ = r.Start(ctx, id)
	next(t, evs)
	if err := r.Crash(id, 137); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, evs); ev.Type != runtime.EventDie || ev.ExitCode != 137 {
		t.Fatalf("crash event %+v", ev)
	}
	if err := r.Crash(id, 1); err == nil {
		t.Fatal("crash of a stopped container accepted")
	}
	_ = r.Start(ctx, id)
	next(t, evs)
	if err := r.OOMKill(id); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, evs); ev.Type != runtime.EventDie || ev.ExitCode != fake.ExitKilled {
		t.Fatalf("oom event %+v", ev)
	}
	if st, _ := r.Inspect(ctx, id); !st.OOMKilled || st.ExitCode != fake.ExitKilled {
		t.Fatalf("oom state %+v", st)
	}
	_ = r.Start(ctx, id)
	if st, _ := r.Inspect(ctx, id); st.OOMKilled {
		t.Fatal("OOMKilled survives a restart")
	}
}

func TestKnownImages(t *testing.T) {
	r := fake.New(fake.WithImages("img:1"))
	if _, err := r.Create(t.Context(), runtime.ContainerSpec{Image: "img:2"}); !errors.Is(err, runtime.ErrImageNotFound) {
		t.Fatalf("want ErrImageNotFound, got %v", err)
	}
	if _, err := r.Create(t.Context(), runtime.ContainerSpec{Image: "img:1"}); err != nil {
		t.Fatal(err)
	}
}

func TestEventsEndWithContextAndInstancesAreIsolated(t *testing.T) {
	r1, r2 := fake.New(), fake.New()
	ctx, cancel := context.WithCancel(t.Context())
	evs, errc := r1.Events(ctx, nil)
	_, _ = r2.Create(t.Context(), spec("only-in-r2", nil))
	if l, _ := r1.List(t.Context(), nil); len(l) != 0 {
		t.Fatalf("instances share state: %+v", l)
	}
	cancel()
	select {
	case _, ok := <-evs:
		if ok {
			t.Fatal("unexpected event")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("event channel not closed after cancel")
	}
	if err, ok := <-errc; ok {
		t.Fatalf("clean end must not report an error: %v", err)
	}
}

func TestSlowSubscriberIsCutOff(t *testing.T) {
	r := fake.New(fake.WithProcess(func(context.Context, fake.Process) int { return 0 }))
	ctx := t.Context()
	evs, errc := r.Events(ctx, nil)
	id, _ := r.Create(ctx, spec("a", nil))
	// Each start emits start + die; never reading overflows the buffer.
	for i := 0; i < 600; i++ { // 1200 events > eventBuffer
		_ = r.Start(ctx, id)
		waitState(t, r, id, func(s runtime.ContainerState) bool { return !s.Running })
	}
	if err := <-errc; !errors.Is(err, fake.ErrSlowSubscriber) {
		t.Fatalf("want ErrSlowSubscriber, got %v", err)
	}
	n := 0
	for range evs {
		n++
	}
	if n == 0 || n > 1024 {
		t.Fatalf("buffered events drained = %d", n)
	}
}
