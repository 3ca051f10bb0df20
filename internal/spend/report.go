package spend

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Report is the getSpendHistory payload.
type Report struct {
	// Days are the UTC days with usage, oldest first.
	Days []Day `json:"days"`
	// UnpricedModels lists models whose tokens are counted but that no pricing source knows.
	UnpricedModels []string `json:"unpricedModels"`
	// UnparseableFiles counts files that could not be read or held no parseable line, and folders under a session
	// root that could not be listed (their files' tokens are missing from the report).
	UnparseableFiles int `json:"unparseableFiles"`
	// UnparseableLines counts complete lines that could not be parsed, lines longer than MaxLineBytes included.
	UnparseableLines int64 `json:"unparseableLines"`
	// PendingFiles counts files of agent homes that this call did not read to the end because it had read its
	// budget of the home (Options.ScanBudget): their remaining tokens are missing, and later calls read on.
	PendingFiles int `json:"pendingFiles,omitempty"`
	// SaturatedRows counts the rows of Days whose token counts reached spend.MaxTokens (see ModelSpend.Saturated).
	SaturatedRows int `json:"saturatedRows"`
	// PricingSource is the pricing chain link that answered: live, cache or bundled.
	PricingSource string `json:"pricingSource"`
	// PricingFallbackReason explains why the live table was not used.
	PricingFallbackReason string `json:"pricingFallbackReason,omitempty"`
	// IndexNote reports index recovery, when it happened.
	IndexNote string `json:"indexNote,omitempty"`
	// Agents breaks the days down per agent (omitted for local runs).
	Agents []AgentSpend `json:"agents,omitempty"`
	// Quota is the newest live quota per agent and harness.
	Quota []AgentQuota `json:"quota,omitempty"`
}

// Day is one UTC day of usage.
type Day struct {
	// Date is YYYY-MM-DD (UTC).
	Date string `json:"date"`
	// Models are the day's per-model totals.
	Models []ModelSpend `json:"models"`
}

// ModelSpend is one model's tokens and cost.
type ModelSpend struct {
	Model         string  `json:"model"`
	Harness       Harness `json:"harness"`
	UncachedInput int64   `json:"uncachedInput"`
	CacheRead     int64   `json:"cacheRead"`
	CacheWrite    int64   `json:"cacheWrite"`
	Output        int64   `json:"output"`
	CostUSD       float64 `json:"costUSD"`
	// Priced is false when no pricing source knows the model (CostUSD is then 0 and meaningless).
	Priced bool `json:"priced"`
	// Saturated is true when a count reached MaxTokens (math.MaxInt64): the sum did not fit, the counts at that
	// value and CostUSD are lower bounds.
	Saturated bool `json:"saturated,omitempty"`
}

// AgentSpend is one agent's days.
type AgentSpend struct {
	Namespace string `json:"namespace"`
	Agent     string `json:"agent"`
	Days      []Day  `json:"days"`
}

// AgentQuota is one agent's live quota for one harness.
type AgentQuota struct {
	Namespace string `json:"namespace"`
	Agent     string `json:"agent"`
	Quota
}

type cellKey struct {
	Day     int32
	Harness Harness
	Model   string
}

type cell struct {
	tokens Buckets
	cost   float64
}

func (s *Service) reportLocked(ctx context.Context, sinceDay int32, scopes []Scope) (*Report, error) {
	x := s.idx
	x.freshTotals()
	requested := map[string]bool{}
	var agentOrder []string
	agentNames := map[string]Scope{}
	for _, sc := range scopes {
		requested[string(sc.Harness)+"\x00"+sc.agentKey()] = true
		if _, ok := agentNames[sc.agentKey()]; !ok && sc.agentKey() != "" {
			agentNames[sc.agentKey()] = sc
			agentOrder = append(agentOrder, sc.agentKey())
		}
	}
	rep := &Report{Days: []Day{}, UnpricedModels: []string{}, IndexNote: s.indexNote}
	models := map[string]bool{}
	for id, k := range x.keys {
		if k.Day >= sinceDay && requested[string(k.Harness)+"\x00"+k.Agent] && !x.totals[id].IsZero() {
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
	rep.PricingSource, rep.PricingFallbackReason = pricing.Source, pricing.FallbackReason
	for _, m := range modelList {
		if _, ok := pricing.Rates[m]; !ok {
			rep.UnpricedModels = append(rep.UnpricedModels, m)
		}
	}
	all := map[cellKey]*cell{}
	perAgent := map[string]map[cellKey]*cell{}
	for id, k := range x.keys {
		b := x.totals[id]
		if k.Day < sinceDay || !requested[string(k.Harness)+"\x00"+k.Agent] || b.IsZero() {
			continue
		}
		cost := 0.0
		if r, ok := pricing.Rates[k.Model]; ok {
			cost = r.Cost(b, k.OverTier)
		}
		ck := cellKey{k.Day, k.Harness, k.Model}
		addCell(all, ck, b, cost)
		if k.Agent != "" {
			if perAgent[k.Agent] == nil {
				perAgent[k.Agent] = map[cellKey]*cell{}
			}
			addCell(perAgent[k.Agent], ck, b, cost)
		}
	}
	rep.Days = daysOf(all, pricing)
	for _, d := range rep.Days {
		for _, m := range d.Models {
			if m.Saturated {
				rep.SaturatedRows++
			}
		}
	}
	for _, a := range agentOrder {
		sc := agentNames[a]
		rep.Agents = append(rep.Agents, AgentSpend{Namespace: sc.Namespace, Agent: sc.Agent, Days: daysOf(perAgent[a], pricing)})
	}
	quotas := map[string]*AgentQuota{}
	for _, f := range x.files {
		if !requested[string(f.Harness)+"\x00"+f.Agent] {
			continue
		}
		rep.UnparseableLines += f.Unparseable
		if f.unparseable() {
			rep.UnparseableFiles++
		}
		if f.pending {
			rep.PendingFiles++
		}
		if f.Quota == nil || f.Agent == "" && len(agentNames) > 0 {
			continue
		}
		qk := string(f.Harness) + "\x00" + f.Agent
		if cur := quotas[qk]; cur == nil || cur.UnixMilli < f.Quota.UnixMilli {
			sc := agentNames[f.Agent]
			quotas[qk] = &AgentQuota{Namespace: sc.Namespace, Agent: sc.Agent, Quota: *f.Quota}
		}
	}
	for _, q := range quotas {
		rep.Quota = append(rep.Quota, *q)
	}
	sort.Slice(rep.Quota, func(i, j int) bool {
		a, b := rep.Quota[i], rep.Quota[j]
		if a.Namespace+"/"+a.Agent != b.Namespace+"/"+b.Agent {
			return a.Namespace+"/"+a.Agent < b.Namespace+"/"+b.Agent
		}
		return a.Harness < b.Harness
	})
	return rep, nil
}

// prices asks the pricing source for models (sorted, distinct).
func (s *Service) prices(ctx context.Context, models []string) (Pricing, error) {
	pricing := Pricing{Source: PricingBundled}
	if s.opts.Pricing != nil && len(models) > 0 {
		p, err := s.opts.Pricing.Prices(ctx, models)
		if err != nil {
			return Pricing{}, fmt.Errorf("spend: pricing: %w", err)
		}
		pricing = p
	} else if s.opts.Pricing == nil {
		pricing.FallbackReason = "no pricing source configured"
	}
	return pricing, nil
}

func addCell(m map[cellKey]*cell, k cellKey, b Buckets, cost float64) {
	c := m[k]
	if c == nil {
		c = &cell{}
		m[k] = c
	}
	c.tokens = c.tokens.Add(b)
	c.cost += cost
}

func daysOf(cells map[cellKey]*cell, pricing Pricing) []Day {
	keys := make([]cellKey, 0, len(cells))
	for k := range cells {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Day != b.Day {
			return a.Day < b.Day
		}
		if a.Harness != b.Harness {
			return a.Harness < b.Harness
		}
		return a.Model < b.Model
	})
	days := []Day{}
	for _, k := range keys {
		date := time.UnixMilli(int64(k.Day) * 86_400_000).UTC().Format(time.DateOnly)
		if len(days) == 0 || days[len(days)-1].Date != date {
			days = append(days, Day{Date: date})
		}
		c := cells[k]
		_, priced := pricing.Rates[k.Model]
		d := &days[len(days)-1]
		d.Models = append(d.Models, ModelSpend{Model: k.Model, Harness: k.Harness, UncachedInput: c.tokens.UncachedInput,
			CacheRead: c.tokens.CacheRead, CacheWrite: c.tokens.CacheWrite(), Output: c.tokens.Output, CostUSD: c.cost,
			Priced: priced, Saturated: c.tokens.Saturated()})
	}
	return days
}
