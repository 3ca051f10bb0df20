package client

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// WatchUntil watches plural in namespace after opts.ResourceVersion and calls
// fn for every ADDED, MODIFIED and DELETED event until fn reports done, fn
// fails, or ctx ends (then it returns nil). A stream the server ends is
// resumed from the last version seen, bookmarks included, with a Backoff
// while streams end without progress; a version too old to resume from is
// returned as a 410 error (apierrors.IsResourceExpired or IsGone).
func (c *Client) WatchUntil(ctx context.Context, plural, namespace string, opts ListOptions, fn func(watch.Event) (bool, error)) error {
	opts.AllowWatchBookmarks = true
	var backoff Backoff
	for {
		w, err := c.Watch(ctx, plural, namespace, opts)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		progressed := false
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Error:
				w.Stop()
				if st, ok := ev.Object.(*metav1.Status); ok {
					return apierrors.FromObject(st)
				}
				return fmt.Errorf("watch error: %v", ev.Object)
			case watch.Bookmark:
				if obj, ok := ev.Object.(*unstructured.Unstructured); ok && obj.GetResourceVersion() != "" {
					opts.ResourceVersion = obj.GetResourceVersion()
				}
				continue
			}
			obj, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			opts.ResourceVersion, progressed = obj.GetResourceVersion(), true
			done, err := fn(ev)
			if done || err != nil {
				w.Stop()
				return err
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return nil
		}
		if progressed {
			backoff.Reset()
		}
		if !backoff.Wait(ctx) {
			return nil
		}
	}
}

// ErrDeleted is returned by WaitFor when the object is deleted before the
// wait is over.
var ErrDeleted = errors.New("deleted while waiting")

// WaitFor reads plural namespace/name and watches it until done reports true
// for it, with nil once the object does not exist. It returns the last object
// seen (nil when gone) and:
//   - nil when done reported true, done's error when it failed;
//   - the server's NotFound when the object does not exist at the start and
//     done(nil) is false, ErrDeleted when it is deleted later;
//   - ctx.Err() when ctx ends first.
//
// It reads the object once, then follows it through the watch; when the
// watch cannot resume (410) it reads the object again.
func (c *Client) WaitFor(ctx context.Context, plural, namespace, name string,
	done func(obj *unstructured.Unstructured) (bool, error)) (*unstructured.Unstructured, error) {
	var last *unstructured.Unstructured
	for {
		obj, err := c.Get(ctx, plural, namespace, name)
		switch {
		case err != nil && ctx.Err() != nil:
			return last, ctx.Err()
		case apierrors.IsNotFound(err):
			if ok, derr := done(nil); ok || derr != nil {
				return nil, derr
			}
			return nil, err
		case err != nil:
			return last, err
		}
		last = obj
		if ok, derr := done(obj); ok || derr != nil {
			return obj, derr
		}
		var result error
		finished := false
		err = c.WatchUntil(ctx, plural, namespace, ListOptions{ResourceVersion: obj.GetResourceVersion()}, func(ev watch.Event) (bool, error) {
			o := ev.Object.(*unstructured.Unstructured)
			if o.GetName() != name {
				return false, nil
			}
			if ev.Type == watch.Deleted {
				last = nil
				ok, derr := done(nil)
				if !ok && derr == nil {
					derr = ErrDeleted
				}
				finished, result = true, derr
				return true, nil
			}
			last = o
			ok, derr := done(o)
			finished, result = ok || derr != nil, derr
			return finished, nil
		})
		switch {
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			continue // compacted past our version: read again
		case err != nil:
			return last, err
		case finished:
			return last, result
		}
		return last, ctx.Err()
	}
}
