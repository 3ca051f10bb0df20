package watchfilter

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

func obj(name, model, state string, deleting bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     map[string]any{"model": model},
		"status":   map[string]any{"state": state},
	}}
	if deleting {
		now := metav1.Now()
		u.SetDeletionTimestamp(&now)
	}
	return u
}

// TestFilterPassesWhatChanged: creations, deletions, bookmarks, spec or
// deletion-mark updates and the first update of an unseen object pass; a
// status-only update of a seen object does not.
func TestFilterPassesWhatChanged(t *testing.T) {
	f := New(SameSpec)
	steps := []struct {
		name string
		ev   watch.Event
		want bool
	}{
		{"an update of an object never seen", watch.Event{Type: watch.Modified, Object: obj("a", "m1", "x", false)}, true},
		{"a status-only update", watch.Event{Type: watch.Modified, Object: obj("a", "m1", "y", false)}, false},
		{"another object's creation", watch.Event{Type: watch.Added, Object: obj("b", "m1", "y", false)}, true},
		{"a spec update", watch.Event{Type: watch.Modified, Object: obj("a", "m2", "y", false)}, true},
		{"the deletion mark", watch.Event{Type: watch.Modified, Object: obj("a", "m2", "y", true)}, true},
		{"the deletion", watch.Event{Type: watch.Deleted, Object: obj("a", "m2", "y", true)}, true},
		{"a re-creation", watch.Event{Type: watch.Added, Object: obj("a", "m2", "y", false)}, true},
		{"a bookmark", watch.Event{Type: watch.Bookmark, Object: obj("a", "m2", "y", false)}, true},
	}
	for _, s := range steps {
		if got := f.Pass(s.ev); got != s.want {
			t.Fatalf("%s: Pass = %v, want %v", s.name, got, s.want)
		}
	}
	var none *Filter
	if !none.Pass(watch.Event{Type: watch.Modified, Object: obj("a", "m1", "x", false)}) || !New(nil).Pass(watch.Event{Type: watch.Modified, Object: obj("a", "m1", "x", false)}) {
		t.Fatal("a filter without a predicate dropped an event")
	}
}
