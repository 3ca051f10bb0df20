package controllers

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/budget"
	"aicli.dev/aicli/internal/transcript"
)

// sendingPTY records delivered messages.
type sendingPTY struct {
	*scriptedPTY
	mu   sync.Mutex
	sent []string
}

func (p *sendingPTY) SendMessage(_ context.Context, text string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent = append(p.sent, text)
	return nil
}

type mapSpend map[string]budget.Micro

func (m mapSpend) SessionCosts(context.Context, string, string) (map[string]budget.Micro, error) {
	out := make(map[string]budget.Micro, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out, nil
}

// TestPhaseBudget drives hold → BudgetWait → delivery after accrual, then exhaustion → pause → top-up → resume,
// against the real store (the ledger's side table) with an injected clock.
func TestPhaseBudget(t *testing.T) {
	e := newPhaseEnv(t, nil)
	pty := &sendingPTY{scriptedPTY: e.guests.pty}
	guests := &sendingGuests{scriptedGuests: e.guests, pty: pty}
	e.r.Guests = guests
	spend := mapSpend{}
	ledger := &budget.Ledger{Store: e.h.store, Spend: spend, Now: func() time.Time { return e.clock }}
	e.r.Budget = ledger
	attr := &transcript.Attribution{}
	e.r.Attribution = attr
	ctx := context.Background()
	e.h.create("agents", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake",`+
		`"budget":{"usdPerHour":"6","burstUSD":"1","maxWaitSeconds":600}}}`)
	e.h.create("conversations", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Conversation","metadata":{"name":"c"},"spec":{"agentRef":"a"}}`)
	for range 4 {
		if _, err := e.settle(); err != nil {
			t.Fatal(err)
		}
	}
	e.want(v1alpha1.ConditionCLIReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
	e.want(v1alpha1.ConditionBudgetAvailable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "no message is held")
	agent := e.h.agent("a")
	lim, _, _ := budget.LimitsOf(agent.Spec.Budget)
	uid := string(e.conv().UID)
	admit := func(text string) bool {
		t.Helper()
		ok, err := ledger.Admit(ctx, "default", "a", lim, uid, "s-1", "human", text)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !admit("one") {
		t.Fatal("the first message was held")
	}
	// Its turn cost $0.95: $0.05 left, the next needs $0.95 → held; $0.90 at $6/h accrues in 9 minutes.
	spend["s-1"] = 950_000
	// Held advice keeps its speaker (a monitor's, here) until it is delivered.
	if ok, err := ledger.Admit(ctx, "default", "a", lim, uid, "s-1", "injected:watcher", "two"); err != nil || ok {
		t.Fatalf("a message the bucket cannot cover was delivered (%v)", err)
	}
	res, err := e.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	e.want(v1alpha1.ConditionBudgetAvailable, metav1.ConditionFalse, v1alpha1.ReasonBudgetWait, "enough accrues in 9m0s")
	if res.RequeueAfter < 9*time.Minute || res.RequeueAfter > 9*time.Minute+2*time.Second {
		t.Fatalf("RequeueAfter = %v, want about 9m", res.RequeueAfter)
	}
	if c := e.conv(); c.Status.HeldMessages != 1 || c.Status.SpendUSD != "0.95" || len(pty.sent) != 0 {
		t.Fatalf("held %d spend %q sent %v", c.Status.HeldMessages, c.Status.SpendUSD, pty.sent)
	}

	e.clock = e.clock.Add(9 * time.Minute)
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	e.want(v1alpha1.ConditionBudgetAvailable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "no message is held")
	if len(pty.sent) != 1 || pty.sent[0] != "two" || e.conv().Status.HeldMessages != 0 {
		t.Fatalf("sent %v, held %d", pty.sent, e.conv().Status.HeldMessages)
	}
	if got := attr.Claim(uid, "two"); got != "injected:watcher" {
		t.Fatalf("the released message is attributed to %q, want injected:watcher", got)
	}

	// The second turn cost $0.95 too; the rate drops to $1/h: $0.95 would take 57 minutes > 10 → paused.
	spend["s-1"] = 1_900_000
	agent.Spec.Budget.USDPerHour = "1"
	if err := e.h.client.Update(ctx, agent); err != nil {
		t.Fatal(err)
	}
	lim, _, _ = budget.LimitsOf(agent.Spec.Budget)
	if admit("three") {
		t.Fatal("delivered on an empty bucket")
	}
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	if c := e.conv(); c.Spec.DesiredState != v1alpha1.ConversationPaused {
		t.Fatalf("desired %s, want Paused", c.Spec.DesiredState)
	}
	e.want(v1alpha1.ConditionBudgetAvailable, metav1.ConditionFalse, v1alpha1.ReasonBudgetExhausted, "aictl budget topup a")
	e.want(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonBudgetExhausted, "")
	if _, err := e.reconcile(); err != nil { // still exhausted on the next pass
		t.Fatal(err)
	}
	e.want(v1alpha1.ConditionBudgetAvailable, metav1.ConditionFalse, v1alpha1.ReasonBudgetExhausted, "")

	// Top-up, and the resume the top-up handler performs: the held message goes once the run is back.
	if _, err := ledger.TopUp(ctx, "default", "a", lim, 2*budget.MicroPerUSD); err != nil {
		t.Fatal(err)
	}
	conv := e.conv()
	conv.Spec.DesiredState = v1alpha1.ConversationActive
	if err := e.h.client.Update(ctx, conv); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := e.settle(); err != nil {
			t.Fatal(err)
		}
	}
	e.want(v1alpha1.ConditionBudgetAvailable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "no message is held")
	if len(pty.sent) != 2 || pty.sent[1] != "three" {
		t.Fatalf("sent %v after the top-up", pty.sent)
	}
	if e.cond(v1alpha1.ConditionStalled) != nil {
		t.Fatalf("still stalled: %+v", e.cond(v1alpha1.ConditionStalled))
	}
}

// sendingGuests hands out the sending PTY.
type sendingGuests struct {
	*scriptedGuests
	pty *sendingPTY
}

func (g *sendingGuests) Guest(key types.NamespacedName, uid string) (ptyapi.PTY, string, bool) {
	_, fp, ok := g.scriptedGuests.Guest(key, uid)
	if !ok {
		return nil, "", false
	}
	return g.pty, fp, true
}
