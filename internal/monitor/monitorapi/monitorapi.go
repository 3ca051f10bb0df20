// Package monitorapi serves POST …/monitorattachments/{name}/rearm: a
// human's re-arm of a tripped monitor breaker (the only way it closes).
package monitorapi

import (
	"context"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/monitor/breaker"
	"aicli.dev/aicli/internal/monitor/monitorwire"
	"aicli.dev/aicli/internal/storeclient"
)

const plural = "monitorattachments"

var gr = v1alpha1.GroupVersion.WithResource(plural).GroupResource()

// Mount registers the rearm subresource on s; the API server has
// authenticated the request and authorised its namespace.
func Mount(s *apiserver.Server, st storeclient.Store) {
	s.HandleSubresource(plural, monitorwire.SubRearm, &handler{c: storeclient.New(st), now: time.Now})
}

type handler struct {
	c   *storeclient.Client
	now func() time.Time
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts, ok := apiserver.LeafSubresource(w, r, gr, http.MethodPost)
	if !ok {
		return
	}
	a, err := Rearm(r.Context(), h.c, parts.Namespace, parts.Name, h.now())
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	a.APIVersion, a.Kind = v1alpha1.GroupVersion.String(), "MonitorAttachment"
	apiserver.WriteJSON(w, http.StatusOK, a)
}

// Rearm closes the attachment's breaker (a no-op on a closed one, which keeps its counts).
func Rearm(ctx context.Context, c *storeclient.Client, ns, name string, now time.Time) (*v1alpha1.MonitorAttachment, error) {
	for attempt := 0; ; attempt++ {
		a := &v1alpha1.MonitorAttachment{}
		if err := c.Get(ctx, ns, name, a); err != nil {
			return nil, err
		}
		if breaker.Closed(&a.Status) {
			return a, nil
		}
		breaker.Rearm(a, now)
		err := c.UpdateStatus(ctx, a)
		if apierrors.IsConflict(err) && attempt < 10 {
			continue
		}
		return a, err
	}
}
