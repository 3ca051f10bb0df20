package store_test

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/store/storetest"
)

const res = "agents"

func agent(ns, name string, spec map[string]interface{}) *unstructured.Unstructured {
	return storetest.Object("Agent", ns, name, spec)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustCreate(t *testing.T, s *store.Store, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := s.Create(ctxT(t), res, obj)
	if err != nil {
		t.Fatalf("create %s: %v", obj.GetName(), err)
	}
	return out
}

func mustGet(t *testing.T, s *store.Store, ns, name string) *unstructured.Unstructured {
	t.Helper()
	out, err := s.Get(ctxT(t), res, ns, name)
	if err != nil {
		t.Fatalf("get %s/%s: %v", ns, name, err)
	}
	return out
}

func historyTypes(t *testing.T, s *store.Store, ns, name string) []string {
	t.Helper()
	h, err := s.History(ctxT(t), res, ns, name)
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	var out []string
	for _, e := range h {
		out = append(out, e.Type)
	}
	return out
}

// next receives one event or fails after a deadline.
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch channel closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatalf("no watch event within 5s")
	}
	return watch.Event{}
}

// nextNonBookmark skips bookmarks.
func nextNonBookmark(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	for {
		if ev := next(t, w); ev.Type != watch.Bookmark {
			return ev
		}
	}
}

// expectQuiet asserts no event other than a bookmark arrives for d.
func expectQuiet(t *testing.T, w watch.Interface, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Bookmark {
				t.Fatalf("unexpected event %s %v", ev.Type, ev.Object)
			}
		case <-deadline:
			return
		}
	}
}

func evName(ev watch.Event) string {
	u, ok := ev.Object.(*unstructured.Unstructured)
	if !ok {
		return ""
	}
	return u.GetName()
}

func toJSON(v interface{}) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
