package console

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/console/fleet"
)

// candidate is a supervisor a new agent may go to.
type candidate struct {
	Sup     *fleet.Supervisor
	Healthy bool
	// Live counts its live conversations; -1 when it could not be counted.
	Live int
}

// placementOrder is where a new agent is tried, best first: healthy
// supervisors whose load is known, fewest live conversations first (ties
// keep the configured order). Supervisors that are down or could not be
// counted are left out.
func placementOrder(cands []candidate) []*fleet.Supervisor {
	ok := make([]candidate, 0, len(cands))
	for _, c := range cands {
		if c.Healthy && c.Live >= 0 {
			ok = append(ok, c)
		}
	}
	sort.SliceStable(ok, func(i, j int) bool { return ok[i].Live < ok[j].Live })
	out := make([]*fleet.Supervisor, len(ok))
	for i, c := range ok {
		out[i] = c.Sup
	}
	return out
}

// candidates counts the live conversations of every configured supervisor
// that is up: from its info endpoint, or (a supervisor without one) by
// listing its conversations.
func (s *Server) candidates(ctx context.Context) []candidate {
	out := make([]candidate, len(s.Fleet.Supervisors))
	for i, sup := range s.Fleet.Supervisors {
		out[i] = candidate{Sup: sup, Healthy: sup.Health().Up, Live: -1}
	}
	s.eachSupervisor(ctx, func(ctx context.Context, i int, sup *fleet.Supervisor) error {
		if out[i].Healthy {
			out[i].Live = liveConversations(ctx, sup)
		}
		return nil
	})
	return out
}

// liveConversations is sup's count of live conversations, -1 when it cannot
// be had.
func liveConversations(ctx context.Context, sup *fleet.Supervisor) int {
	info, err := sup.Client.Info(ctx)
	if err == nil {
		return info.Capacity.LiveConversations
	}
	if !apierrors.IsNotFound(err) {
		return -1
	}
	list, err := sup.Client.List(ctx, "conversations", "", client.ListOptions{})
	if err != nil {
		return -1
	}
	n := 0
	for _, c := range list.Items {
		if st, _, _ := unstructured.NestedString(c.Object, "status", "state"); st == "Active" {
			n++
		}
	}
	return n
}

// newAgent is what the create form asks for, as objects to create.
type newAgent struct {
	Agent *unstructured.Unstructured
	// Grant is nil when no tool was chosen.
	Grant *unstructured.Unstructured
}

// launchAttempt is one supervisor's try at a new agent.
type launchAttempt struct {
	Supervisor string
	Err        error
}

// errNoSupervisor says no supervisor can take a new agent now.
var errNoSupervisor = errors.New("no supervisor can take a new agent now: every configured supervisor is down " +
	"(see Settings)")

// placeAgent creates the agent on the first supervisor of order and starts
// its first conversation; when that launch fails (it is refused, stalls or
// is not live within s.launchTimeout()), it deletes the agent there and
// tries the next one. It returns the supervisor that runs it and the
// conversation, or every attempt's error.
func (s *Server) placeAgent(ctx context.Context, order []*fleet.Supervisor, na newAgent) (*fleet.Supervisor, string, error) {
	if len(order) == 0 {
		return nil, "", errNoSupervisor
	}
	var attempts []launchAttempt
	for _, sup := range order {
		conv, err := s.launchOn(ctx, sup, na)
		if err == nil {
			return sup, conv, nil
		}
		var ue *UserError
		if errors.As(err, &ue) || ctx.Err() != nil {
			return nil, "", err
		}
		s.log().Warn("console: first launch failed; trying the next supervisor", "supervisor", sup.Name,
			"agent", na.Agent.GetName(), "err", err)
		attempts = append(attempts, launchAttempt{Supervisor: sup.Name, Err: err})
		s.removeAgent(sup, na)
	}
	return nil, "", &launchError{attempts: attempts}
}

// launchError is a new agent that could not be launched anywhere.
type launchError struct{ attempts []launchAttempt }

func (e *launchError) Error() string {
	msgs := make([]string, len(e.attempts))
	for i, a := range e.attempts {
		_, msg := ErrorMessage(a.Err)
		msgs[i] = fmt.Sprintf("attempt %d: %s", i+1, msg)
	}
	return "the agent could not be launched on any supervisor (" + strings.Join(msgs, "; ") + ")"
}

// launchOn creates the agent (and its grant) on sup and waits until its
// first conversation is live.
func (s *Server) launchOn(ctx context.Context, sup *fleet.Supervisor, na newAgent) (string, error) {
	cl := sup.Client
	if _, err := cl.Create(ctx, na.Agent.DeepCopy(), client.WriteOptions{}); err != nil {
		return "", err
	}
	if na.Grant != nil {
		if _, err := cl.Create(ctx, na.Grant.DeepCopy(), client.WriteOptions{}); err != nil {
			return "", err
		}
	}
	conv, err := startAgent(ctx, cl, na.Agent.GetNamespace(), na.Agent.GetName())
	if err != nil {
		return "", err
	}
	wctx, cancel := context.WithTimeout(ctx, s.launchTimeout())
	defer cancel()
	if _, err := cl.WaitConversationLive(wctx, na.Agent.GetNamespace(), conv); err != nil {
		return "", err
	}
	return conv, nil
}

// removeAgent deletes what launchOn created on sup (best effort: the
// supervisor may be the reason the launch failed).
func (s *Server) removeAgent(sup *fleet.Supervisor, na newAgent) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	ns := na.Agent.GetNamespace()
	if na.Grant != nil {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = sup.Client.Delete(ctx, "grants", ns, na.Grant.GetName()) }()
	}
	if _, err := sup.Client.Delete(ctx, "agents", ns, na.Agent.GetName()); err != nil {
		s.log().Warn("console: deleting the agent of a failed launch", "supervisor", sup.Name, "agent", na.Agent.GetName(), "err", err)
	}
	wg.Wait()
}

// launchTimeout bounds the wait for a new agent's first conversation to be live.
func (s *Server) launchTimeout() time.Duration {
	if s.LaunchTimeout > 0 {
		return s.LaunchTimeout
	}
	return 3 * time.Minute
}
