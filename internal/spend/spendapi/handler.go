package spendapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"aicli.dev/aicli/internal/spend"
)

// DefaultDays is the history length served when the request names no since day.
const DefaultDays = 30

// AgentLister returns the agents whose homes the endpoint reads.
type AgentLister func(ctx context.Context) ([]spend.AgentHome, error)

// NewHandler serves GET ?since=YYYY-MM-DD[&namespace=NS][&agent=NAME] with the spend.Report JSON (agent keeps only
// the agents of that name). The namespace may also come
// from a "{namespace}" path wildcard of the mux pattern the handler is mounted under.
func NewHandler(svc *spend.Service, agents AgentLister) http.Handler {
	return &handler{svc: svc, agents: agents, now: time.Now}
}

type handler struct {
	svc    *spend.Service
	agents AgentLister
	now    func() time.Time
}

type apiError struct {
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Code    int    `json:"code"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(apiError{Kind: "Status", Status: "Failure", Message: msg, Code: code})
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "spendhistory supports GET only")
		return
	}
	q := r.URL.Query()
	since := q.Get("since")
	if since == "" {
		since = h.now().UTC().AddDate(0, 0, -DefaultDays).Format(time.DateOnly)
	} else if _, err := time.Parse(time.DateOnly, since); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("since: want YYYY-MM-DD, got %q", since))
		return
	}
	ns := q.Get("namespace")
	if pv := r.PathValue("namespace"); pv != "" {
		if ns != "" && ns != pv {
			writeError(w, http.StatusBadRequest, "namespace: query and path disagree")
			return
		}
		ns = pv
	}
	homes, err := h.agents(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("list agents: %v", err))
		return
	}
	if agent := q.Get("agent"); ns != "" || agent != "" {
		kept := homes[:0:0]
		for _, a := range homes {
			if (ns == "" || a.Namespace == ns) && (agent == "" || a.Name == agent) {
				kept = append(kept, a)
			}
		}
		homes = kept
	}
	rep, err := h.svc.History(r.Context(), since, h.svc.HomeScopes(homes))
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(rep)
}

// HomesUnder lists agent homes laid out as <dataDir>/agents/<namespace>/<agent>/home.
func HomesUnder(dataDir string) AgentLister {
	return func(context.Context) ([]spend.AgentHome, error) { return listHomes(dataDir) }
}
