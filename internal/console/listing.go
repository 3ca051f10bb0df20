package console

import (
	"context"
	"net/http"
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

// listAgentsAndConversations lists agents and conversations on every
// supervisor, both at once (listAll each).
func (s *Server) listAgentsAndConversations(ctx context.Context) (agents, convs []Listed) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); agents = s.listAll(ctx, "agents", "") }()
	go func() { defer wg.Done(); convs = s.listAll(ctx, "conversations", "") }()
	wg.Wait()
	return agents, convs
}

// listTimeout bounds one supervisor's list: a slow one cannot hold a page.
const listTimeout = 5 * time.Second

// listAll lists resource in namespace ns ("" for all) on every supervisor
// that is not known to be down, in parallel, in the fleet's order.
func (s *Server) listAll(ctx context.Context, resource, ns string) []Listed {
	out := make([]Listed, len(s.Fleet.Supervisors))
	errs := s.eachSupervisor(ctx, func(ctx context.Context, i int, sup *fleet.Supervisor) error {
		list, err := sup.Client.List(ctx, resource, ns, client.ListOptions{})
		if err != nil {
			return err
		}
		out[i].Items = list.Items
		return nil
	})
	for i, sup := range s.Fleet.Supervisors {
		out[i].Supervisor, out[i].Err = sup, errs[i]
	}
	return out
}

// eachSupervisor runs fn for every supervisor that is not known to be down,
// in parallel, each call bounded by listTimeout. It returns, in the fleet's
// order, fn's error or why the supervisor was skipped.
func (s *Server) eachSupervisor(ctx context.Context, fn func(ctx context.Context, i int, sup *fleet.Supervisor) error) []error {
	errs := make([]error, len(s.Fleet.Supervisors))
	var wg sync.WaitGroup
	for i, sup := range s.Fleet.Supervisors {
		if h := sup.Health(); !h.Up && !h.Checked.IsZero() {
			errs[i] = &UserError{Status: http.StatusServiceUnavailable, Msg: "supervisor " + sup.Name + " is down: " + h.Err}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, listTimeout)
			defer cancel()
			errs[i] = fn(ctx, i, sup)
		}()
	}
	wg.Wait()
	return errs
}
