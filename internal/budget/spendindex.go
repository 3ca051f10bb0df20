package budget

import (
	"context"

	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/spend"
)

// SpendIndex measures an agent's spend per CLI session from the spend index (SpendSource), reading the agent's
// durable home under DataDir.
type SpendIndex struct {
	Service *spend.Service
	DataDir layout.Dir
}

// SessionCosts implements SpendSource.
func (c SpendIndex) SessionCosts(ctx context.Context, ns, agent string) (map[string]Micro, error) {
	home := spend.AgentHome{Namespace: ns, Name: agent, Home: c.DataDir.AgentHome(ns, agent)}
	costs, err := c.Service.Sessions(ctx, c.Service.HomeScopes([]spend.AgentHome{home}))
	if err != nil {
		return nil, err
	}
	out := make(map[string]Micro, len(costs))
	for _, s := range costs {
		out[s.Session] = FromUSD(s.CostUSD)
	}
	return out, nil
}
