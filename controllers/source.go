package controllers

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"aicli.dev/aicli/internal/store"
)

// Watcher is the part of the event store a watch source needs.
type Watcher interface {
	Watch(ctx context.Context, resource, namespace string, opts store.WatchOptions) (watch.Interface, error)
}

// MapFunc turns one changed object into the requests it should trigger.
type MapFunc func(ctx context.Context, obj *unstructured.Unstructured) []reconcile.Request

// StoreSource feeds a controller from the store's watch on resource: every
// current object at start, then every change. It re-watches from the last
// seen resourceVersion when the watch ends, and from scratch when that
// version has been compacted away.
func StoreSource(st Watcher, resource string, log *slog.Logger, mappers ...MapFunc) source.Source {
	return FilteredStoreSource(st, resource, log, nil, mappers...)
}

// Unchanged reports whether an update from old to new is of no interest to a
// controller (a predicate on updates; creations and deletions always pass).
type Unchanged func(old, new *unstructured.Unstructured) bool

// FilteredStoreSource is StoreSource without the updates unchanged reports
// (nil: none is dropped). It remembers the last version of every object it
// saw to compare against.
func FilteredStoreSource(st Watcher, resource string, log *slog.Logger, unchanged Unchanged, mappers ...MapFunc) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go runStoreSource(ctx, st, resource, log, q, unchanged, mappers)
		return nil
	})
}

func runStoreSource(ctx context.Context, st Watcher, resource string, log *slog.Logger,
	q workqueue.TypedRateLimitingInterface[reconcile.Request], unchanged Unchanged, mappers []MapFunc) {
	rv := ""
	var seen map[types.NamespacedName]*unstructured.Unstructured
	if unchanged != nil {
		seen = map[types.NamespacedName]*unstructured.Unstructured{}
	}
	for ctx.Err() == nil {
		w, err := st.Watch(ctx, resource, "", store.WatchOptions{ResourceVersion: rv})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				rv = ""
				continue
			}
			log.Error("watch failed; retrying", "resource", resource, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		rv = drain(ctx, w, rv, q, unchanged, seen, mappers)
		w.Stop()
	}
}

func drain(ctx context.Context, w watch.Interface, rv string, q workqueue.TypedRateLimitingInterface[reconcile.Request],
	unchanged Unchanged, seen map[types.NamespacedName]*unstructured.Unstructured, mappers []MapFunc) string {
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv
			}
			if ev.Type == watch.Error {
				// Fell behind or compacted: start over from the current state.
				return ""
			}
			obj, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			rv = obj.GetResourceVersion()
			if ev.Type == watch.Bookmark {
				continue
			}
			key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
			if seen != nil {
				old := seen[key]
				if ev.Type == watch.Deleted {
					delete(seen, key)
				} else {
					seen[key] = obj
				}
				if ev.Type == watch.Modified && old != nil && unchanged(old, obj) {
					continue
				}
			}
			q.Add(reconcile.Request{NamespacedName: key})
			for _, m := range mappers {
				for _, req := range m(ctx, obj) {
					q.Add(req)
				}
			}
		}
	}
}

// sameSpec reports whether new has old's spec and deletion mark (an update
// of status or metadata only).
func sameSpec(old, new *unstructured.Unstructured) bool {
	return old.GetDeletionTimestamp().Equal(new.GetDeletionTimestamp()) && equality.Semantic.DeepEqual(old.Object["spec"], new.Object["spec"])
}
