package apiserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"aicli.dev/aicli/internal/store"
)

// WatchEvent is one line of a watch stream.
type WatchEvent struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}

func (h *request) watch() {
	sel, err := h.selector()
	if err != nil {
		writeError(h.w, err)
		return
	}
	q := h.r.URL.Query()
	ctx := h.r.Context()
	if ts := q.Get("timeoutSeconds"); ts != "" {
		secs, err := strconv.Atoi(ts)
		if err != nil || secs < 0 {
			writeError(h.w, apierrors.NewBadRequest("timeoutSeconds must be a non-negative integer"))
			return
		}
		if secs > 0 {
			var cancel func()
			ctx, cancel = contextWithTimeout(ctx, time.Duration(secs)*time.Second)
			defer cancel()
		}
	}
	w, err := h.s.opts.Store.Watch(ctx, h.res.Plural, h.parts.Namespace, store.WatchOptions{
		ResourceVersion: q.Get("resourceVersion"),
		LabelSelector:   sel,
		AllowBookmarks:  q.Get("allowWatchBookmarks") == "true",
	})
	if err != nil {
		writeError(h.w, err)
		return
	}
	defer w.Stop()
	h.w.Header().Set("Content-Type", "application/json")
	h.w.Header().Set("Transfer-Encoding", "chunked")
	h.w.WriteHeader(http.StatusOK)
	flusher, _ := h.w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	enc := json.NewEncoder(h.w)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if err := enc.Encode(WatchEvent{Type: ev.Type, Object: eventObject(ev.Object)}); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			if ev.Type == watch.Error {
				return
			}
		}
	}
}

func eventObject(obj runtime.Object) any {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o.Object
	case *metav1.Status:
		if o.Kind == "" {
			o.Kind, o.APIVersion = "Status", "v1"
		}
		return o
	default:
		return obj
	}
}
