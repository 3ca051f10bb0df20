package spendapi

import (
	"context"

	"aicli.dev/aicli/internal/budget"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/spend"
)

// SessionCosts measures one agent's spend per CLI session for the budget (budget.SpendSource), from the agent's
// durable home under DataDir.
type SessionCosts struct {
	Service *spend.Service
	DataDir layout.Dir
}

// SessionCosts implements budget.SpendSource.
func (c SessionCosts) SessionCosts(ctx context.Context, ns, agent string) (map[string]budget.Micro, error) {
	home := spend.AgentHome{Namespace: ns, Name: agent, Home: c.DataDir.AgentHome(ns, agent)}
	costs, err := c.Service.Sessions(ctx, c.Service.HomeScopes([]spend.AgentHome{home}))
	if err != nil {
		return nil, err
	}
	out := make(map[string]budget.Micro, len(costs))
	for _, s := range costs {
		out[s.Session] = budget.FromUSD(s.CostUSD)
	}
	return out, nil
}
