package console

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/console/fleet"
)

// Listed is one supervisor's list of a resource.
type Listed struct {
	Supervisor *fleet.Supervisor
	Items      []unstructured.Unstructured
	// Err is why the list failed (the supervisor is down, refused, …).
	Err error
}

// listTimeout bounds one supervisor's list: a slow one cannot hold a page.
const listTimeout = 5 * time.Second

// listAll lists resource in namespace ns ("" for all) on every supervisor
// that is not known to be down, in parallel, in the fleet's order.
func (s *Server) listAll(ctx context.Context, resource, ns string) []Listed {
	out := make([]Listed, len(s.Fleet.Supervisors))
	var wg sync.WaitGroup
	for i, sup := range s.Fleet.Supervisors {
		out[i].Supervisor = sup
		if h := sup.Health(); !h.Up && !h.Checked.IsZero() {
			out[i].Err = &UserError{Status: 503, Msg: "supervisor " + sup.Name + " is down: " + h.Err}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, listTimeout)
			defer cancel()
			list, err := sup.Client.List(ctx, resource, ns, client.ListOptions{})
			if err != nil {
				out[i].Err = err
				return
			}
			out[i].Items = list.Items
		}()
	}
	wg.Wait()
	return out
}
