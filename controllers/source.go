package controllers

import (
	"context"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/watchfilter"
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

// FilteredStoreSource is StoreSource without the updates unchanged reports
// (nil: none is dropped).
func FilteredStoreSource(st Watcher, resource string, log *slog.Logger, unchanged watchfilter.Unchanged, mappers ...MapFunc) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go runStoreSource(ctx, st, resource, log, q, watchfilter.New(unchanged), mappers)
		return nil
	})
}

func runStoreSource(ctx context.Context, st Watcher, resource string, log *slog.Logger,
	q workqueue.TypedRateLimitingInterface[reconcile.Request], filter *watchfilter.Filter, mappers []MapFunc) {
	rv := ""
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
		rv = drain(ctx, w, rv, q, filter, mappers)
		w.Stop()
	}
}

func drain(ctx context.Context, w watch.Interface, rv string,
	q workqueue.TypedRateLimitingInterface[reconcile.Request], filter *watchfilter.Filter, mappers []MapFunc) string {
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
			if ev.Type == watch.Bookmark || !filter.Pass(ev) {
				continue
			}
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}})
			for _, m := range mappers {
				for _, req := range m(ctx, obj) {
					q.Add(req)
				}
			}
		}
	}
}
