package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Watch streams changes of plural in namespace (all namespaces when empty)
// after opts.ResourceVersion. Events carry *unstructured.Unstructured objects,
// ERROR events a *metav1.Status (for example 410 Gone when the version was
// compacted). The result channel closes when the server ends the stream, ctx
// ends, or Stop is called.
func (c *Client) Watch(ctx context.Context, plural, namespace string, opts ListOptions) (watch.Interface, error) {
	ctx, cancel := context.WithCancel(ctx)
	resp, err := c.do(ctx, http.MethodGet, ResourcePath(plural, namespace, "")+opts.query(true), "", nil)
	if err != nil {
		cancel()
		return nil, err
	}
	w := &streamWatcher{body: resp.Body, cancel: cancel, result: make(chan watch.Event), done: make(chan struct{})}
	go w.receive(ctx)
	return w, nil
}

// streamWatcher decodes a newline-delimited stream of watch events.
type streamWatcher struct {
	body     io.ReadCloser
	cancel   context.CancelFunc
	result   chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
}

// ResultChan implements watch.Interface.
func (w *streamWatcher) ResultChan() <-chan watch.Event { return w.result }

// Stop implements watch.Interface; it ends the stream and closes ResultChan.
func (w *streamWatcher) Stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.cancel()
	})
}

type wireEvent struct {
	Type   watch.EventType `json:"type"`
	Object json.RawMessage `json:"object"`
}

func (w *streamWatcher) receive(ctx context.Context) {
	defer close(w.result)
	defer w.body.Close()
	defer w.cancel()
	dec := json.NewDecoder(w.body)
	for {
		var ev wireEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil || w.stopped() {
				return
			}
			w.send(watch.Event{Type: watch.Error, Object: statusObject(
				apierrors.NewInternalError(fmt.Errorf("decoding watch stream: %w", err)))})
			return
		}
		obj, err := eventObject(ev)
		if err != nil {
			w.send(watch.Event{Type: watch.Error, Object: statusObject(apierrors.NewInternalError(err))})
			return
		}
		if !w.send(watch.Event{Type: ev.Type, Object: obj}) {
			return
		}
	}
}

func (w *streamWatcher) stopped() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

func (w *streamWatcher) send(ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-w.done:
		return false
	}
}

func eventObject(ev wireEvent) (runtime.Object, error) {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		obj, err := decodeObject(ev.Object)
		if err != nil {
			return nil, fmt.Errorf("watch %s event: %w", ev.Type, err)
		}
		if obj == nil {
			return nil, fmt.Errorf("watch %s event without an object", ev.Type)
		}
		return obj, nil
	case watch.Error:
		st := &metav1.Status{}
		if err := json.Unmarshal(ev.Object, st); err != nil {
			return nil, fmt.Errorf("watch ERROR event: %w", err)
		}
		return st, nil
	default:
		return nil, fmt.Errorf("watch event of unknown type %q", ev.Type)
	}
}

func statusObject(err *apierrors.StatusError) *metav1.Status {
	st := err.Status()
	return &st
}
