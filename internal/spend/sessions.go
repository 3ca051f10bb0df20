package spend

import (
	"context"
	"regexp"
	"sort"
)

// uuidRE matches a CLI session id: Claude names a session's file (and its subagents' folder) after it, Codex ends
// a rollout file's name with it.
var uuidRE = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// SessionOf is the CLI session a session file belongs to: the last UUID in its path (Claude
// `projects/P/<session>.jsonl` and `projects/P/<session>/subagents/agent-x.jsonl`, Codex
// `rollout-<time>-<session>.jsonl`), or "" when the path has none.
func SessionOf(path string) string {
	all := uuidRE.FindAllString(path, -1)
	if len(all) == 0 {
		return ""
	}
	return all[len(all)-1]
}

// SessionCost is one CLI session's accounted cost. A usage line copied into several files (a resumed session)
// counts once, for the session whose file was read first.
type SessionCost struct {
	Namespace string `json:"namespace"`
	Agent     string `json:"agent"`
	Session   string `json:"session"`
	// CostUSD is the cost of the session's priced usage.
	CostUSD float64 `json:"costUSD"`
	// Unpriced is true when some of the session's usage could not be priced.
	Unpriced bool `json:"unpriced,omitempty"`
}

// Sessions brings the index up to date for the scopes and returns the cost of every session with usage, ordered by
// agent and session.
func (s *Service) Sessions(ctx context.Context, scopes []Scope) ([]SessionCost, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return nil, err
	}
	if err := s.updateLocked(ctx, scopes); err != nil {
		return nil, err
	}
	x := s.idx
	x.freshTotals()
	agents := map[string]Scope{}
	requested := map[string]bool{}
	for _, sc := range scopes {
		requested[string(sc.Harness)+"\x00"+sc.agentKey()] = true
		agents[sc.agentKey()] = sc
	}
	counted := func(k aggKey, id int) bool {
		return k.Session != "" && requested[string(k.Harness)+"\x00"+k.Agent] && !x.totals[id].IsZero()
	}
	models := map[string]bool{}
	for id, k := range x.keys {
		if counted(k, id) {
			models[k.Model] = true
		}
	}
	modelList := make([]string, 0, len(models))
	for m := range models {
		modelList = append(modelList, m)
	}
	sort.Strings(modelList)
	pricing, err := s.prices(ctx, modelList)
	if err != nil {
		return nil, err
	}
	type sessionKey struct{ agent, session string }
	costs := map[sessionKey]*SessionCost{}
	for id, k := range x.keys {
		if !counted(k, id) {
			continue
		}
		sk := sessionKey{k.Agent, k.Session}
		c := costs[sk]
		if c == nil {
			sc := agents[k.Agent]
			c = &SessionCost{Namespace: sc.Namespace, Agent: sc.Agent, Session: k.Session}
			costs[sk] = c
		}
		if r, ok := pricing.Rates[k.Model]; ok {
			c.CostUSD += r.Cost(x.totals[id], k.OverTier)
		} else {
			c.Unpriced = true
		}
	}
	out := make([]SessionCost, 0, len(costs))
	for _, c := range costs {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace+"/"+out[i].Agent != out[j].Namespace+"/"+out[j].Agent {
			return out[i].Namespace+"/"+out[i].Agent < out[j].Namespace+"/"+out[j].Agent
		}
		return out[i].Session < out[j].Session
	})
	return out, nil
}
