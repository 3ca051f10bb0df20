package controllers

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/store"
)

// TestFilteredStoreSourceDropsUnchangedUpdates runs a source with sameSpec
// over a real store: creation, a spec update and deletion reach the queue, a
// status-only update does not (the next request is a later object's).
func TestFilteredStoreSourceDropsUnchangedUpdates(t *testing.T) {
	e := newMonitorEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	src := FilteredStoreSource(e.h.store, "agents", slog.New(slog.NewTextHandler(io.Discard, nil)), sameSpec)
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

// TestOnlyCursorsMoved: the attachment controller ignores the watch loop's
// cursor writes and nothing else.
func TestOnlyCursorsMoved(t *testing.T) {
	base := func() *v1alpha1.MonitorAttachment {
		a := &v1alpha1.MonitorAttachment{}
		a.Name, a.ResourceVersion = "watch", "7"
		a.Spec.Monitor = "m"
		a.Status.Conversations = []v1alpha1.MonitoredConversation{{Target: "t-1", Cursor: 4}, {Target: "t-2", Cursor: 9, Monitor: "m-1"}}
		return a
	}
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.MonitorAttachment)
		want   bool
	}{
		{"cursors and resourceVersion", func(a *v1alpha1.MonitorAttachment) {
			a.ResourceVersion = "8"
			a.Status.Conversations[0].Cursor, a.Status.Conversations[1].Cursor = 5, 12
		}, true},
		{"a monitor conversation named", func(a *v1alpha1.MonitorAttachment) { a.Status.Conversations[0].Monitor = "m-2" }, false},
		{"a target conversation added", func(a *v1alpha1.MonitorAttachment) {
			a.Status.Conversations = append(a.Status.Conversations, v1alpha1.MonitoredConversation{Target: "t-3"})
		}, false},
		{"a wake counted", func(a *v1alpha1.MonitorAttachment) { a.Status.Wakes = 1 }, false},
		{"the breaker's count", func(a *v1alpha1.MonitorAttachment) { a.Status.ConsecutiveHumanless = 2 }, false},
		{"spec", func(a *v1alpha1.MonitorAttachment) { a.Spec.Mode = v1alpha1.MonitorWatchOnly }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, changed := base(), base()
			tc.change(changed)
			if got := onlyCursorsMoved(toUnstructured(t, old), toUnstructured(t, changed)); got != tc.want {
				t.Fatalf("onlyCursorsMoved = %v, want %v", got, tc.want)
			}
		})
	}
}

func toUnstructured(t *testing.T, a *v1alpha1.MonitorAttachment) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}
