package controllers

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/watchfilter"
)

// TestFilteredStoreSourceDropsUnchangedUpdates runs a source with SameSpec
// over a real store: creation, a spec update and deletion reach the queue, a
// status-only update does not (the next request is a later object's).
func TestFilteredStoreSourceDropsUnchangedUpdates(t *testing.T) {
	e := newMonitorEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	src := FilteredStoreSource(e.h.store, "agents", slog.New(slog.NewTextHandler(io.Discard, nil)), watchfilter.SameSpec)
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	next := func(want string) {
		t.Helper()
		got := make(chan reconcile.Request, 1)
		go func() {
			req, _ := q.Get()
			q.Done(req)
			got <- req
		}()
		select {
		case req := <-got:
			if req.Name != want {
				t.Fatalf("next request is for %q, want %q", req.Name, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no request for %q", want)
		}
	}
	e.h.create("agents", agentJSON("a"))
	next("a")
	a := e.h.agent("a")
	a.Status.InboxUnread = 3
	if err := e.h.client.UpdateStatus(ctx, a); err != nil {
		t.Fatal(err)
	}
	a = e.h.agent("a")
	a.Annotations = map[string]string{"note": "x"}
	if err := e.h.client.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	e.h.create("agents", agentJSON("b"))
	next("b")
	a = e.h.agent("a")
	a.Spec.Model = "other"
	if err := e.h.client.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	next("a")
	if _, err := e.h.store.Delete(ctx, "agents", "default", "a", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	next("a")
}
