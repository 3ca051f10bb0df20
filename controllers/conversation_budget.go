package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/budget"
)

// Budget is the agents' spend budget as the conversation reconciler uses it (budget.Ledger).
type Budget interface {
	Review(ctx context.Context, ns, agent string, lim budget.Limits, convUID, session string) (budget.Review, error)
	Delivered(ctx context.Context, ns, agent string, lim budget.Limits, convUID, key string) error
}

// budgetPauseError is the budget phase's verdict that accrual cannot cover the next held message within the
// agent's maxWait: a planned pause until a top-up.
type budgetPauseError struct{ why string }

func (e *budgetPauseError) Error() string { return "budget exhausted: " + e.why }

// reconcileBudget owns BudgetAvailable: it settles the conversation's measured spend into its agent's bucket,
// reports it in status.spendUSD, delivers the held messages the bucket covers, in order, and otherwise waits
// (BudgetWait, requeued when enough will have accrued) or pauses the conversation (BudgetExhausted).
func (r *ConversationReconciler) reconcileBudget(ctx context.Context, s *convScope) (reconcile.Result, error) {
	conv := s.conv
	if r.Budget == nil || s.agent == nil {
		return reconcile.Result{}, nil
	}
	lim, ok, err := budget.LimitsOf(s.agent.Spec.Budget)
	if err != nil {
		return reconcile.Result{}, stalled(v1alpha1.ReasonInvalidSpec, "agent %s: %v", s.agent.Name, err)
	}
	if !ok {
		meta.RemoveStatusCondition(&conv.Status.Conditions, v1alpha1.ConditionBudgetAvailable)
		conv.Status.HeldMessages = 0
		return reconcile.Result{}, nil
	}
	session := ""
	if conv.Status.Session != nil {
		session = conv.Status.Session.SessionID
	}
	rv, err := r.Budget.Review(ctx, conv.Namespace, s.agent.Name, lim, string(conv.UID), session)
	if err != nil {
		return reconcile.Result{}, transient(v1alpha1.ReasonRetrying, err)
	}
	conv.Status.SpendUSD = rv.Spent.String()
	held := len(rv.Held)
	if s.stop || s.pty == nil {
		conv.Status.HeldMessages = int32(held)
		return reconcile.Result{}, r.budgetStopped(s, rv)
	}
	for _, h := range rv.Held[:rv.Release] {
		if r.Attribution != nil {
			r.Attribution.Expect(string(conv.UID), h.Speaker, h.Text)
		}
		if err := s.pty.SendMessage(ctx, h.Text); err != nil {
			conv.Status.HeldMessages = int32(held)
			return reconcile.Result{}, transient(v1alpha1.ReasonRetrying, fmt.Errorf("delivering a held message: %w", err))
		}
		if err := r.Budget.Delivered(ctx, conv.Namespace, s.agent.Name, lim, string(conv.UID), h.Key); err != nil {
			conv.Status.HeldMessages = int32(held)
			return reconcile.Result{}, transient(v1alpha1.ReasonRetrying, err)
		}
		held--
		s.sent = true
	}
	conv.Status.HeldMessages = int32(held)
	if held == 0 && rv.Level < rv.Need {
		s.budgetShort = fmt.Sprintf("the budget covers no further message now: the next needs $%s, $%s available", rv.Need, rv.Level)
	}
	switch {
	case held == 0:
		s.set(v1alpha1.ConditionBudgetAvailable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "no message is held")
		return reconcile.Result{}, nil
	case rv.Exhausted:
		return reconcile.Result{}, &budgetPauseError{why: exhaustedWhy(s.agent.Name, held, rv, lim)}
	default:
		return reconcile.Result{}, waiting(v1alpha1.ReasonBudgetWait, rv.Wait+time.Second,
			"%d message(s) held: the next needs $%s, $%s available; enough accrues in %s",
			held, rv.Need, rv.Level, rv.Wait.Round(time.Second))
	}
}

// budgetStopped reports the budget of a conversation that has no run: still exhausted (only a top-up helps:
// Stalled), or holding messages for when it is Active again.
func (r *ConversationReconciler) budgetStopped(s *convScope, rv budget.Review) error {
	c := meta.FindStatusCondition(s.conv.Status.Conditions, v1alpha1.ConditionBudgetAvailable)
	wasExhausted := s.stopReason == v1alpha1.ReasonBudgetExhausted ||
		(c != nil && c.Reason == v1alpha1.ReasonBudgetExhausted && !s.desiredActive())
	switch {
	case len(rv.Held) > 0 && wasExhausted:
		return stalled(v1alpha1.ReasonBudgetExhausted, "%d message(s) held and the budget is exhausted: "+
			"top it up to continue (aictl budget topup %s --usd N)", len(rv.Held), s.agent.Name)
	case len(rv.Held) > 0:
		reason, _ := s.stoppedReason()
		s.set(v1alpha1.ConditionBudgetAvailable, metav1.ConditionFalse, reason,
			fmt.Sprintf("%d message(s) held until the conversation runs", len(rv.Held)))
	default:
		s.set(v1alpha1.ConditionBudgetAvailable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "no message is held")
	}
	return nil
}

func exhaustedWhy(agent string, held int, rv budget.Review, lim budget.Limits) string {
	return fmt.Sprintf("%d message(s) held: the next needs $%s, $%s available, and $%s/h cannot accrue it within %s "+
		"(burst $%s); top up to continue (aictl budget topup %s --usd N)",
		held, rv.Need, rv.Level, lim.Rate, lim.MaxWait, lim.Capacity, agent)
}
