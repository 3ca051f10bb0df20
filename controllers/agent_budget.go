package controllers

import (
	"context"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/budget"
)

// AgentBudget reads an agent's bucket (budget.Ledger).
type AgentBudget interface {
	Snapshot(ctx context.Context, ns, agent string, lim budget.Limits) (*budget.State, error)
}

// observeBudget copies the agent's bucket into status.budget (an observation; the ledger owns the state). An
// unreadable budget leaves the last observation; an invalid spec.budget is reported by the conversations.
func (r *AgentReconciler) observeBudget(ctx context.Context, agent *v1alpha1.Agent) {
	if r.Budget == nil {
		return
	}
	lim, ok, err := budget.LimitsOf(agent.Spec.Budget)
	if err != nil {
		return
	}
	if !ok {
		agent.Status.Budget = nil
		return
	}
	st, err := r.Budget.Snapshot(ctx, agent.Namespace, agent.Name, lim)
	if err != nil {
		r.Logger.Warn("reading the agent's budget", "namespace", agent.Namespace, "agent", agent.Name, "err", err)
		return
	}
	agent.Status.Budget = st.Status()
}
