package runtime_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/runtime/fake"
)

func TestWatchEventsSurvivesBrokenStreams(t *testing.T) {
	rt := fake.New()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sel := map[string]string{"s": "1"}
	evs := runtime.WatchEvents(ctx, rt, sel, slog.New(slog.DiscardHandler))
	recv := func() runtime.Event {
		t.Helper()
		select {
		case ev, ok := <-evs:
			if !ok {
				t.Fatal("watch channel closed")
			}
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
		return runtime.Event{}
	}
	id, _ := rt.Create(ctx, runtime.ContainerSpec{Name: "a", Image: "i", Labels: sel})
	waitSubscribed(t, rt)
	_ = rt.Start(ctx, id)
	if ev := recv(); ev.Type != runtime.EventStart || ev.ID != id {
		t.Fatalf("got %+v", ev)
	}
	// The engine "restarts" and the next subscription attempt fails too: the watch re-subscribes and says resync.
	rt.FailNext(fake.OpEvents, errors.New("engine down"))
	rt.BreakEvents(errors.New("connection reset"))
	if ev := recv(); ev.Type != runtime.EventResync {
		t.Fatalf("want resync after the break, got %+v", ev)
	}
	if ev := recv(); ev.Type != runtime.EventResync {
		t.Fatalf("want resync after the failed re-subscription, got %+v", ev)
	}
	waitSubscribed(t, rt)
	_ = rt.Stop(ctx, id, time.Second)
	if ev := recv(); ev.Type != runtime.EventDie || ev.ID != id {
		t.Fatalf("events after re-subscription: %+v", ev)
	}
	cancel()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-evs:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("watch channel not closed after cancel")
		}
	}
}

// waitSubscribed waits until the fake has a live subscriber (WatchEvents subscribes from its own goroutine).
func waitSubscribed(t *testing.T, rt *fake.Runtime) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for rt.Subscribers() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no subscriber")
		}
		time.Sleep(time.Millisecond)
	}
}
