package toolcallapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/toolcalls"
)

const (
	conversationsPlural = "conversations"
	grantsPlural        = "grants"
)

var conversationsGR = v1alpha1.GroupVersion.WithResource(conversationsPlural).GroupResource()

// Store reads conversations, grants and grant histories.
type Store interface {
	Get(ctx context.Context, resource, namespace, name string) (*unstructured.Unstructured, error)
	List(ctx context.Context, resource, namespace string, sel labels.Selector) (*unstructured.UnstructuredList, error)
	History(ctx context.Context, resource, namespace, name string) ([]store.HistoryEvent, error)
}

// Register mounts the toolcalls subresource of conversations on s; the API
// server has authenticated the request and authorised its namespace.
func Register(s *apiserver.Server, st Store) {
	s.HandleSubresource(conversationsPlural, toolcalls.SubToolCalls, &handler{st: st})
}

type handler struct {
	st Store
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts, ok := apiserver.LeafSubresource(w, r, conversationsGR, http.MethodGet)
	if !ok {
		return
	}
	calls, err := h.calls(r.Context(), parts.Namespace, parts.Name)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(toolcalls.List{Items: calls})
}

// calls reads the conversation's calls from the history of every grant whose
// subject is its agent, newest last.
func (h *handler) calls(ctx context.Context, ns, name string) ([]toolcalls.Call, error) {
	conv, err := h.st.Get(ctx, conversationsPlural, ns, name)
	if err != nil {
		return nil, err
	}
	agent, _, _ := unstructured.NestedString(conv.Object, "spec", "agentRef")
	grants, err := h.st.List(ctx, grantsPlural, ns, labels.Everything())
	if err != nil {
		return nil, err
	}
	out := []toolcalls.Call{}
	for _, g := range grants.Items {
		if subject, _, _ := unstructured.NestedString(g.Object, "spec", "subject"); subject != agent {
			continue
		}
		history, err := h.st.History(ctx, grantsPlural, ns, g.GetName())
		if err != nil {
			return nil, fmt.Errorf("reading the history of grant %s: %w", g.GetName(), err)
		}
		events := make([]toolcalls.Event, len(history))
		for i, e := range history {
			events[i] = toolcalls.Event{Type: e.Type, Object: e.Object}
		}
		out = append(out, toolcalls.ForConversation(toolcalls.FromHistory(g.GetName(), events), name)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(&out[j].At) })
	return out, nil
}
