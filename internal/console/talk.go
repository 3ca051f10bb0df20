package console

import (
	"context"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/console/auth"
	"aicli.dev/aicli/internal/console/fleet"
	"aicli.dev/aicli/internal/convapi/wire"
)

// talkPath is the end user's chat view of an agent.
func talkPath(supervisor, ns, agent string) string {
	return "/talk/" + url.PathEscape(supervisor) + "/" + url.PathEscape(ns) + "/" + url.PathEscape(agent)
}

// talkPage is the end user's chat view: GET /talk/{supervisor}/{namespace}/{agent}.
// It shows the agent's live conversation, or its latest one, or a button
// that starts one.
func (s *Server) talkPage(w http.ResponseWriter, r *http.Request) {
	sup, err := s.supervisor(r.PathValue("supervisor"))
	if err != nil {
		s.fail(w, r, "user", err)
		return
	}
	ns, agent := r.PathValue("namespace"), r.PathValue("agent")
	if h := sup.Health(); !h.Up && !h.Checked.IsZero() {
		s.fail(w, r, "user", &UserError{Status: http.StatusServiceUnavailable,
			Msg: agent + " cannot be reached right now: the supervisor that runs it does not answer (see Settings). Try again later."})
		return
	}
	conv, err := agentConversation(r.Context(), sup, ns, agent)
	if err != nil {
		s.fail(w, r, "user", err)
		return
	}
	v := &convView{Section: "user", Supervisor: sup.Name, Namespace: ns, Agent: agent}
	if conv != "" {
		if v, err = s.conversationView(r.Context(), r, "user", sup, ns, conv); err != nil {
			s.fail(w, r, "user", err)
			return
		}
	} else if sess := auth.FromContext(r.Context()); sess != nil {
		v.CSRF = sess.CSRF
	}
	s.render(w, http.StatusOK, "conversation", s.page(r, "user", "agents", s.displayName(sup.Name, ns, agent), v))
}

// displayName is the agent's alias (settings), or its name.
func (s *Server) displayName(supervisor, ns, agent string) string {
	if a := s.State.Get().Aliases[aliasKey(supervisor, ns, agent)]; a != "" {
		return a
	}
	return agent
}

// agentConversation names the conversation the chat view shows: the agent's
// live one, else its newest; "" when it has none. An agent that does not
// exist is the server's NotFound.
func agentConversation(ctx context.Context, sup *fleet.Supervisor, ns, agent string) (string, error) {
	obj, err := sup.Client.Get(ctx, "agents", ns, agent)
	if err != nil {
		return "", err
	}
	if live, _, _ := unstructured.NestedString(obj.Object, "status", "liveConversation"); live != "" {
		return live, nil
	}
	list, err := sup.Client.List(ctx, "conversations", ns, client.ListOptions{})
	if err != nil {
		return "", err
	}
	var newest *unstructured.Unstructured
	for i := range list.Items {
		c := &list.Items[i]
		if ref, _, _ := unstructured.NestedString(c.Object, "spec", "agentRef"); ref != agent {
			continue
		}
		if newest == nil || newest.GetCreationTimestamp().Time.Before(c.GetCreationTimestamp().Time) {
			newest = c
		}
	}
	if newest == nil {
		return "", nil
	}
	return newest.GetName(), nil
}

// talkStart starts or continues the agent's conversation and shows it:
// POST /talk/{supervisor}/{namespace}/{agent}/start.
func (s *Server) talkStart(w http.ResponseWriter, r *http.Request) {
	sup, err := s.supervisor(r.PathValue("supervisor"))
	if err != nil {
		s.fail(w, r, "user", err)
		return
	}
	ns, agent := r.PathValue("namespace"), r.PathValue("agent")
	if _, err := startAgent(r.Context(), sup.Client, ns, agent); err != nil {
		s.fail(w, r, "user", err)
		return
	}
	back := talkPath(sup.Name, ns, agent)
	if r.Header.Get("HX-Request") != "" {
		w.Header().Set("HX-Redirect", back)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// startAgent is "start or continue": it returns the agent's live
// conversation, created when there was none.
func startAgent(ctx context.Context, cl *client.Client, ns, agent string) (string, error) {
	raw, err := cl.DoRaw(ctx, http.MethodPost, client.ResourcePath("agents", ns, agent, wire.SubStart), client.ContentTypeJSON, []byte("{}"))
	if err != nil {
		return "", err
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		return "", apierrors.NewInternalError(err)
	}
	return obj.GetName(), nil
}
