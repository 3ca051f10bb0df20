package convapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/budget"
	"aicli.dev/aicli/internal/convapi/convapitest"
	"aicli.dev/aicli/internal/convapi/wire"
)

// heldBudget holds every message and records top-ups.
type heldBudget struct {
	mu     sync.Mutex
	held   []string
	topped []budget.Micro
}

func (b *heldBudget) Admit(_ context.Context, _, _ string, _ budget.Limits, _, _, _, text string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held = append(b.held, text)
	return false, nil
}

func (b *heldBudget) TopUp(_ context.Context, _, _ string, lim budget.Limits, usd budget.Micro) (*budget.State, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.topped = append(b.topped, usd)
	return &budget.State{Bucket: budget.Bucket{Level: usd, AsOf: time.Now()}}, nil
}

func (b *heldBudget) Snapshot(context.Context, string, string, budget.Limits) (*budget.State, error) {
	return &budget.State{Bucket: budget.Bucket{AsOf: time.Now()}}, nil
}

func setBudget(t *testing.T, env *convapitest.Env, rate string) {
	t.Helper()
	obj, err := env.Store.Get(context.Background(), "agents", "default", "coder")
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(obj.Object, rate, "spec", "budget", "usdPerHour")
	if _, err := env.Store.Update(context.Background(), "agents", obj); err != nil {
		t.Fatal(err)
	}
}

func TestSendHeldByTheBudgetAndTopUpResumes(t *testing.T) {
	b := &heldBudget{}
	env := convapitest.Start(t, convapitest.WithBudget(b))
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)
	pty := env.Live(t, "default", "c1")

	// Without spec.budget everything is delivered.
	code, body := env.Do(t, http.MethodPost, sendPath("default", "c1"), "text/plain", []byte("free"))
	if code != http.StatusAccepted || len(pty.Messages()) != 1 {
		t.Fatalf("send without a budget: %d %s, guest got %q", code, body, pty.Messages())
	}
	// With one, a message the bucket cannot cover is held: 202 held, not delivered.
	setBudget(t, env, "0.5")
	code, body = env.Do(t, http.MethodPost, sendPath("default", "c1"), "text/plain", []byte("costly"))
	var resp wire.SendResponse
	if code != http.StatusAccepted || json.Unmarshal(body, &resp) != nil || !resp.Held {
		t.Fatalf("held send: %d %s", code, body)
	}
	if len(pty.Messages()) != 1 || len(b.held) != 1 {
		t.Fatalf("guest got %q, budget saw %q", pty.Messages(), b.held)
	}

	// Paused by an exhausted budget: a send says how to continue.
	obj, err := env.Store.Get(context.Background(), "conversations", "default", "c1")
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(obj.Object, string(v1alpha1.ConversationPaused), "spec", "desiredState")
	if obj, err = env.Store.Update(context.Background(), "conversations", obj); err != nil {
		t.Fatal(err)
	}
	conds := []any{map[string]any{"type": v1alpha1.ConditionBudgetAvailable, "status": string(metav1.ConditionFalse),
		"reason": v1alpha1.ReasonBudgetExhausted, "message": "exhausted", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}
	_ = unstructured.SetNestedSlice(obj.Object, conds, "status", "conditions")
	if _, err := env.Store.UpdateStatus(context.Background(), "conversations", obj); err != nil {
		t.Fatal(err)
	}
	code, body = env.Do(t, http.MethodPost, sendPath("default", "c1"), "text/plain", []byte("more"))
	wantStatus(t, code, body, http.StatusConflict, "aictl budget topup coder")

	// A top-up with a new rate: the rate goes through the API (validated), the funds to the budget, and the
	// conversation its budget paused is resumed.
	topup := apischema.APIPath + "/namespaces/default/agents/coder/budget/topup"
	code, body = env.Do(t, http.MethodPost, topup, "application/json", []byte(`{"usd":"2","usdPerHour":"abc"}`))
	wantStatus(t, code, body, http.StatusBadRequest, "usdPerHour")
	code, body = env.Do(t, http.MethodPost, topup, "application/json", []byte(`{"usd":"2","usdPerHour":"1.5"}`))
	var view wire.BudgetView
	if code != http.StatusOK || json.Unmarshal(body, &view) != nil || view.USDPerHour != "1.5" || len(view.Resumed) != 1 {
		t.Fatalf("top-up: %d %s", code, body)
	}
	if len(b.topped) != 1 || b.topped[0] != 2_000_000 {
		t.Fatalf("topped up %v", b.topped)
	}
	c, _ := env.Store.Get(context.Background(), "conversations", "default", "c1")
	if d, _, _ := unstructured.NestedString(c.Object, "spec", "desiredState"); d != string(v1alpha1.ConversationActive) {
		t.Fatalf("desired %q after the top-up", d)
	}
	a, _ := env.Store.Get(context.Background(), "agents", "default", "coder")
	if r, _, _ := unstructured.NestedString(a.Object, "spec", "budget", "usdPerHour"); r != "1.5" {
		t.Fatalf("rate %q", r)
	}
}
