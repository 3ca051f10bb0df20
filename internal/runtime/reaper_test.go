package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/runtime/fake"
)

func TestReaperSweepOnce(t *testing.T) {
	ctx := t.Context()
	rt := fake.New()
	mk := func(name string, labels map[string]string) string {
		id, err := rt.Create(ctx, runtime.ContainerSpec{Name: name, Image: "i", Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	known := mk("known", map[string]string{runtime.LabelSupervisor: "s1", runtime.LabelConversation: "c1"})
	orphan := mk("orphan", map[string]string{runtime.LabelSupervisor: "s1", runtime.LabelConversation: "gone"})
	if err := rt.Start(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	foreign := mk("foreign", map[string]string{runtime.LabelSupervisor: "s2", runtime.LabelConversation: "gone"})
	unlabeled := mk("unlabeled", nil)

	var logs bytes.Buffer
	r := &runtime.Reaper{
		Runtime:  rt,
		Selector: map[string]string{runtime.LabelSupervisor: "s1"},
		IsKnown:  func(s runtime.ContainerState) bool { return s.Labels[runtime.LabelConversation] == "c1" },
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	}
	removed, err := r.SweepOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != orphan {
		t.Fatalf("removed %v, want only the orphan", removed)
	}
	for _, id := range []string{known, foreign, unlabeled} {
		if _, err := rt.Inspect(ctx, id); err != nil {
			t.Fatalf("%s must survive: %v", id, err)
		}
	}
	if _, err := rt.Inspect(ctx, orphan); !runtime.IsNotFound(err) {
		t.Fatalf("orphan still there: %v", err)
	}
	if !strings.Contains(logs.String(), "removed orphaned container") || !strings.Contains(logs.String(), "orphan") {
		t.Fatalf("removal not logged: %q", logs.String())
	}
	// A second sweep finds nothing.
	if removed, err := r.SweepOnce(ctx); err != nil || len(removed) != 0 {
		t.Fatalf("second sweep: %v %v", removed, err)
	}
}

func TestReaperRefusesEmptySelectorAndReportsErrors(t *testing.T) {
	ctx := t.Context()
	rt := fake.New()
	r := &runtime.Reaper{Runtime: rt, IsKnown: func(runtime.ContainerState) bool { return false }}
	if _, err := r.SweepOnce(ctx); err == nil {
		t.Fatal("empty selector accepted")
	}
	_, _ = rt.Create(ctx, runtime.ContainerSpec{Name: "a", Image: "i", Labels: map[string]string{"s": "1"}})
	_, _ = rt.Create(ctx, runtime.ContainerSpec{Name: "b", Image: "i", Labels: map[string]string{"s": "1"}})
	r.Selector = map[string]string{"s": "1"}
	boom := errors.New("boom")
	rt.FailNext(fake.OpRemove, boom)
	removed, err := r.SweepOnce(ctx)
	if !errors.Is(err, boom) || len(removed) != 1 {
		t.Fatalf("want one removed and the error, got %v %v", removed, err)
	}
	rt.FailNext(fake.OpList, boom)
	if _, err := r.SweepOnce(ctx); !errors.Is(err, boom) {
		t.Fatalf("list error not returned: %v", err)
	}
}

func TestReaperRunSweepsPeriodically(t *testing.T) {
	rt := fake.New()
	var sweeps atomic.Int32
	r := &runtime.Reaper{
		Runtime:  rt,
		Selector: map[string]string{"s": "1"},
		IsKnown:  func(runtime.ContainerState) bool { sweeps.Add(1); return false },
		Interval: 10 * time.Millisecond,
		Logger:   slog.New(slog.DiscardHandler),
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	// Containers created while Run is going are reaped by a later sweep.
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 3; i++ {
		id, _ := rt.Create(t.Context(), runtime.ContainerSpec{Image: "i", Labels: map[string]string{"s": "1"}})
		for {
			if _, err := rt.Inspect(t.Context(), id); runtime.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("container not reaped by Run")
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
	if sweeps.Load() < 3 {
		t.Fatalf("sweeps = %d", sweeps.Load())
	}
}

func TestMatchLabels(t *testing.T) {
	l := map[string]string{"a": "1", "b": "2"}
	for _, c := range []struct {
		sel  map[string]string
		want bool
	}{
		{nil, true}, {map[string]string{"a": "1"}, true}, {map[string]string{"a": "2"}, false},
		{map[string]string{"a": ""}, true}, {map[string]string{"c": ""}, false},
		{map[string]string{"a": "1", "b": "2"}, true}, {map[string]string{"a": "1", "c": "3"}, false},
	} {
		if got := runtime.MatchLabels(l, c.sel); got != c.want {
			t.Errorf("MatchLabels(%v) = %v", c.sel, got)
		}
	}
	if !errors.Is(&runtime.NotFoundError{Ref: "x"}, runtime.ErrNotFound) {
		t.Error("NotFoundError does not match ErrNotFound")
	}
}

func TestReaperSparesYoungContainers(t *testing.T) {
	ctx := t.Context()
	created := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	rt := fake.New(fake.WithClock(func() time.Time { return created }))
	id, _ := rt.Create(ctx, runtime.ContainerSpec{Name: "young", Image: "i", Labels: map[string]string{"s": "1"}})
	now := created.Add(10 * time.Second)
	r := &runtime.Reaper{
		Runtime:  rt,
		Selector: map[string]string{"s": "1"},
		IsKnown:  func(runtime.ContainerState) bool { return false },
		MinAge:   30 * time.Second,
		Now:      func() time.Time { return now },
		Logger:   slog.New(slog.DiscardHandler),
	}
	if removed, err := r.SweepOnce(ctx); err != nil || len(removed) != 0 {
		t.Fatalf("young container reaped: %v %v", removed, err)
	}
	now = created.Add(31 * time.Second)
	if removed, err := r.SweepOnce(ctx); err != nil || len(removed) != 1 || removed[0] != id {
		t.Fatalf("old enough container not reaped: %v %v", removed, err)
	}
}
