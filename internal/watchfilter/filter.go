package watchfilter

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Unchanged reports whether an update from old to new is of no interest to
// a consumer.
type Unchanged func(old, new *unstructured.Unstructured) bool

// Filter remembers the last version of every object of one watched resource
// and lets through the events its Unchanged does not report. Not safe for
// concurrent use (one per watch loop).
type Filter struct {
	unchanged Unchanged
	seen      map[types.NamespacedName]*unstructured.Unstructured
}

// New returns a filter dropping the updates unchanged reports (nil: it drops
// nothing).
func New(unchanged Unchanged) *Filter {
	return &Filter{unchanged: unchanged, seen: map[types.NamespacedName]*unstructured.Unstructured{}}
}

// Pass reports whether ev is of interest: every creation and deletion, and
// an update unless it is unchanged from the last version seen. Events that
// carry no object (errors, bookmarks) pass.
func (f *Filter) Pass(ev watch.Event) bool {
	if f == nil || f.unchanged == nil {
		return true
	}
	obj, ok := ev.Object.(*unstructured.Unstructured)
	if !ok || ev.Type == watch.Error || ev.Type == watch.Bookmark {
		return true
	}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	old := f.seen[key]
	if ev.Type == watch.Deleted {
		delete(f.seen, key)
		return true
	}
	f.seen[key] = obj
	return ev.Type != watch.Modified || old == nil || !f.unchanged(old, obj)
}

// SameSpec reports whether new has old's spec and deletion mark: an update of
// status or metadata only.
func SameSpec(old, new *unstructured.Unstructured) bool {
	return old.GetDeletionTimestamp().Equal(new.GetDeletionTimestamp()) && equality.Semantic.DeepEqual(old.Object["spec"], new.Object["spec"])
}
