// Package historyapi serves transcript history search on the API:
// GET …/namespaces/{namespace}/agents/{name}/historysearch.
package historyapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/history"
	"aicli.dev/aicli/internal/history/historywire"
)

const agentsPlural = "agents"

var agentsGR = v1alpha1.GroupVersion.WithResource(agentsPlural).GroupResource()

// Searcher is the history index; *history.Index implements it.
type Searcher interface {
	Search(ctx context.Context, q history.Query) ([]history.Hit, error)
}

// Store reads agents (an unknown agent is a 404).
type Store interface {
	Get(ctx context.Context, resource, namespace, name string) (*unstructured.Unstructured, error)
}

// Register serves GET …/agents/{name}/historysearch?q=&speaker=&since=&conversation=&limit=
// on s: the agent's history hits (historywire.Page). The request is
// authenticated and its namespace authorised by the API server's
// subresource routing; a nil ix answers 503.
func Register(s *apiserver.Server, ix Searcher, st Store) {
	s.HandleSubresource(agentsPlural, historywire.SubHistory, &handler{ix: ix, st: st})
}

type handler struct {
	ix Searcher
	st Store
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts, ok := apiserver.LeafSubresource(w, r, agentsGR, http.MethodGet)
	if !ok {
		return
	}
	if _, err := h.st.Get(r.Context(), agentsPlural, parts.Namespace, parts.Name); err != nil {
		apiserver.WriteError(w, err)
		return
	}
	if h.ix == nil {
		apiserver.WriteError(w, apierrors.NewServiceUnavailable("this supervisor keeps no history index"))
		return
	}
	q, err := parseQuery(r, parts.Namespace, parts.Name)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	hits, err := h.ix.Search(r.Context(), q)
	var qe *history.QueryError
	if errors.As(err, &qe) {
		apiserver.WriteError(w, apierrors.NewBadRequest(qe.Error()))
		return
	}
	if errors.Is(err, history.ErrInvalidQuery) {
		apiserver.WriteError(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	if err != nil {
		apiserver.WriteError(w, fmt.Errorf("searching the history of agent %s: %w", parts.Name, err))
		return
	}
	if hits == nil {
		hits = []history.Hit{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(historywire.Page{Items: hits})
}

func parseQuery(r *http.Request, ns, agent string) (history.Query, error) {
	v := r.URL.Query()
	q := history.Query{Namespace: ns, Targets: []v1alpha1.TargetRef{{Agent: agent, Conversation: v.Get("conversation")}},
		Text: v.Get("q"), Speaker: v.Get("speaker")}
	if s := v.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return q, apierrors.NewBadRequest(fmt.Sprintf("since %q: want an RFC 3339 time", s))
		}
		q.Since = t
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > historywire.MaxLimit {
			return q, apierrors.NewBadRequest(fmt.Sprintf("limit %q: want an integer from 1 to %d", s, historywire.MaxLimit))
		}
		q.Limit = n
	}
	return q, nil
}
