package monitor

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// fakeSide is a remote target side at the seam (remote.Side is tested
// against a real API in internal/monitor/remote): one conversation's
// transcript, the advice it took and the pauses it was asked for.
type fakeSide struct {
	mu       sync.Mutex
	entries  []transcriptwire.Entry
	changed  chan struct{}
	injected []string
	paused   []string
	refuse   error
}

func newFakeSide() *fakeSide { return &fakeSide{changed: make(chan struct{})} }

func (f *fakeSide) append(speaker, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = append(f.entries, transcriptwire.Entry{Cursor: int64(len(f.entries) + 1), Speaker: speaker, Text: text, Time: time.Now()})
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeSide) Follow(ctx context.Context, _ TargetConversation, from int64) (<-chan transcriptwire.Entry, error) {
	ch := make(chan transcriptwire.Entry)
	go func() {
		defer close(ch)
		next := max(from, 1)
		for {
			f.mu.Lock()
			batch, changed := append([]transcriptwire.Entry(nil), f.entries[min(int(next-1), len(f.entries)):]...), f.changed
			f.mu.Unlock()
			for _, e := range batch {
				select {
				case ch <- e:
					next = e.Cursor + 1
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}

func (f *fakeSide) Last(context.Context, TargetConversation) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int64(len(f.entries)), nil
}

func (f *fakeSide) Inject(_ context.Context, c TargetConversation, monitor, text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		return f.refuse
	}
	f.injected = append(f.injected, c.Name+" "+monitor+": "+text)
	f.entries = append(f.entries, transcriptwire.Entry{Cursor: int64(len(f.entries) + 1),
		Speaker: transcriptwire.SpeakerInjectedPrefix + monitor, Text: transcriptwire.AdvicePrefix(monitor) + text})
	close(f.changed)
	f.changed = make(chan struct{})
	return nil
}

func (f *fakeSide) Pause(_ context.Context, c TargetConversation) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused = append(f.paused, c.Name)
	return nil
}

func (f *fakeSide) setRefusal(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse = err
}

func (f *fakeSide) snapshot() (injected, paused []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.injected...), append([]string(nil), f.paused...)
}

// A remote attachment is served through its target side: its transcript
// wakes the monitor (its own advice does not), advice goes to the side,
// and a trip pauses the remote target through the side and the local
// monitor conversation.
func TestRemoteTargetThroughTheSide(t *testing.T) {
	e := newEnv(t, v1alpha1.MonitorAdvise, substring("panic"))
	side := newFakeSide()
	ctx := ctxT(t)
	a := e.attachment()
	a.Spec.Target.Supervisor = &v1alpha1.RemoteSupervisor{Address: "https://b.example:7443", TokenSecret: "b-token"}
	a.Spec.Breaker.MaxConsecutiveHumanless = 2
	if err := e.c.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	created := metav1.NewTime(a.CreationTimestamp.Add(time.Second))
	a.Status.Conversations = []v1alpha1.MonitoredConversation{{Target: "rw1", UID: "remote-uid", Created: &created}}
	for _, c := range []string{v1alpha1.ConditionReferencesResolved, v1alpha1.ConditionTriggerReady} {
		meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: "Succeeded",
			ObservedGeneration: a.Generation})
	}
	if err := e.c.UpdateStatus(ctx, a); err != nil {
		t.Fatal(err)
	}
	var opened sync.Map
	e.remote = func(namespace string, rs *v1alpha1.RemoteSupervisor) (TargetSide, error) {
		opened.Store(namespace+" "+rs.Address, true)
		return side, nil
	}
	e.start() // waits for one follow: the remote one (w1 is no target any more)

	side.append(transcriptwire.SpeakerHuman, "a panic over there")
	e.eventually("a wake", func() bool { return len(e.wakes()) == 1 })
	if w := e.wakes()[0]; !strings.Contains(w, `Target conversation: rw1 (agent "worker" on supervisor https://b.example:7443)`) ||
		!strings.Contains(w, "#1 human: a panic over there") {
		t.Fatalf("trigger message: %s", w)
	}
	mon := e.attachment().Status.Conversations[0].Monitor

	out, err := e.svc.Advise(ctx, ns, "watcher", mon, "look at the panic")
	if err != nil || !strings.Contains(out, "advice delivered to rw1") {
		t.Fatalf("advise: %q, %v", out, err)
	}
	// Its own advice (it mentions the keyword) is not evaluated.
	e.eventually("the advice evaluated", func() bool { return e.cursor() == 2 })
	e.never("a wake on its own advice", func() bool { return len(e.wakes()) > 1 })

	convs := v1alpha1.GroupVersion.WithResource("conversations").GroupResource()
	for _, c := range []struct {
		err  error
		want string
	}{
		{apierrors.NewConflict(convs, "rw1", nil), `target conversation "rw1" is not live`},
		{apierrors.NewGenericServerResponse(http.StatusRequestEntityTooLarge, "POST", convs, "rw1", "", 0, false), "too large"},
		{apierrors.NewNotFound(convs, "rw1"), `target conversation "rw1" no longer exists`},
	} {
		side.setRefusal(c.err)
		_, err = e.svc.Advise(ctx, ns, "watcher", mon, "again")
		refusal(t, err, c.want)
	}
	side.setRefusal(nil)

	side.append(transcriptwire.SpeakerAgent, "another panic")
	e.eventually("a second wake", func() bool { return len(e.wakes()) == 2 })
	out, err = e.svc.Advise(ctx, ns, "watcher", mon, "second advice")
	if err != nil || !strings.Contains(out, "tripped") {
		t.Fatalf("the 2nd human-less cycle did not trip: %q, %v", out, err)
	}
	injected, paused := side.snapshot()
	if len(injected) != 2 || injected[0] != "rw1 watcher: look at the panic" || len(paused) != 1 || paused[0] != "rw1" {
		t.Fatalf("injected %q, paused %q", injected, paused)
	}
	c := &v1alpha1.Conversation{}
	if err := e.c.Get(ctx, ns, mon, c); err != nil {
		t.Fatal(err)
	}
	if c.Spec.DesiredState != v1alpha1.ConversationPaused {
		t.Fatalf("monitor conversation is %s after the trip", c.Spec.DesiredState)
	}
	if _, ok := opened.Load(ns + " https://b.example:7443"); !ok {
		t.Fatal("the remote side was not opened for the attachment's namespace and address")
	}
}
