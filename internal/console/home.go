package console

import (
	"context"
	"net/http"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// userAgent is one row of "my agents".
type userAgent struct {
	Supervisor, Namespace, Name string
	Display                     string
	Harness, Model              string
	// State is the shown conversation's state (Active, Paused, Archived),
	// "" when the agent never talked; Execution its BUSY/IDLE/… while live.
	State, Execution string
	Unread           int64
	Talk             string
}

type userHomeData struct {
	Agents []userAgent
	// Unreachable is set when some supervisor could not be listed.
	Unreachable bool
}

// userHome is MyLittleAgi's start page: my agents, refreshed live by the
// agents' and conversations' watches.
func (s *Server) userHome(w http.ResponseWriter, r *http.Request) {
	s.render(w, http.StatusOK, "home", s.page(r, "user", "agents", "My agents", s.myAgents(r.Context())))
}

// userAgentsTable is the watch-refreshed table of userHome: GET /agents/table.
func (s *Server) userAgentsTable(w http.ResponseWriter, r *http.Request) {
	s.partial(w, "home", "agents", s.myAgents(r.Context()))
}

// myAgents lists the agents of every supervisor with the state of their
// live (or latest) conversation and their unread mail.
func (s *Server) myAgents(ctx context.Context) userHomeData {
	agents, convs := s.listAgentsAndConversations(ctx)

	var d userHomeData
	// The conversation each agent shows: its live one, else its newest.
	type key struct{ sup, ns, name string }
	byName := map[key]*unstructured.Unstructured{}
	newest := map[key]*unstructured.Unstructured{}
	for _, l := range convs {
		for i := range l.Items {
			c := &l.Items[i]
			byName[key{l.Supervisor.Name, c.GetNamespace(), c.GetName()}] = c
			agent, _, _ := unstructured.NestedString(c.Object, "spec", "agentRef")
			k := key{l.Supervisor.Name, c.GetNamespace(), agent}
			if n := newest[k]; n == nil || n.GetCreationTimestamp().Time.Before(c.GetCreationTimestamp().Time) {
				newest[k] = c
			}
		}
	}
	for _, l := range agents {
		if l.Err != nil {
			d.Unreachable = true
			continue
		}
		for _, a := range l.Items {
			u := userAgent{Supervisor: l.Supervisor.Name, Namespace: a.GetNamespace(), Name: a.GetName()}
			u.Display = s.displayName(u.Supervisor, u.Namespace, u.Name)
			u.Harness, _, _ = unstructured.NestedString(a.Object, "spec", "harness")
			u.Model, _, _ = unstructured.NestedString(a.Object, "spec", "model")
			u.Unread, _, _ = unstructured.NestedInt64(a.Object, "status", "inboxUnread")
			u.Talk = talkPath(u.Supervisor, u.Namespace, u.Name)
			conv := newest[key{u.Supervisor, u.Namespace, u.Name}]
			if live, _, _ := unstructured.NestedString(a.Object, "status", "liveConversation"); live != "" {
				if c := byName[key{u.Supervisor, u.Namespace, live}]; c != nil {
					conv = c
				}
			}
			if conv != nil {
				u.State, _, _ = unstructured.NestedString(conv.Object, "status", "state")
				if u.State == "" {
					u.State, _, _ = unstructured.NestedString(conv.Object, "spec", "desiredState")
				}
				u.Execution, _, _ = unstructured.NestedString(conv.Object, "status", "execution")
			}
			d.Agents = append(d.Agents, u)
		}
	}
	for _, l := range convs {
		if l.Err != nil {
			d.Unreachable = true
		}
	}
	sort.Slice(d.Agents, func(i, j int) bool {
		if d.Agents[i].Display != d.Agents[j].Display {
			return d.Agents[i].Display < d.Agents[j].Display
		}
		return d.Agents[i].Supervisor < d.Agents[j].Supervisor
	})
	return d
}
