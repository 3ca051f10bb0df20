package convapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/budget"
	"aicli.dev/aicli/internal/convapi/wire"
)

// Budget is the agents' spend budget as the API uses it (budget.Ledger).
type Budget interface {
	Admit(ctx context.Context, ns, agent string, lim budget.Limits, convUID, session, speaker, text string) (bool, error)
	TopUp(ctx context.Context, ns, agent string, lim budget.Limits, usd budget.Micro) (*budget.State, error)
	Snapshot(ctx context.Context, ns, agent string, lim budget.Limits) (*budget.State, error)
}

// readAgent reads an agent typed.
func (a *API) readAgent(ctx context.Context, ns, name string) (*v1alpha1.Agent, error) {
	obj, err := a.opts.Store.Get(ctx, agentsPlural, ns, name)
	if err != nil {
		return nil, err
	}
	return toAgent(obj)
}

func toAgent(obj *unstructured.Unstructured) (*v1alpha1.Agent, error) {
	agent := &v1alpha1.Agent{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, agent); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("decoding agent %s: %w", obj.GetName(), err))
	}
	return agent, nil
}

// admit asks the agent's budget whether text (spoken by speaker) may be delivered to the live conversation now; false means it was
// held durably. Without a budget (none configured, or the agent sets none) everything goes.
func (a *API) admit(ctx context.Context, t *target, speaker, text string) (bool, error) {
	if a.opts.Budget == nil {
		return true, nil
	}
	agentName, _, _ := unstructured.NestedString(t.obj.Object, "spec", "agentRef")
	agent, err := a.readAgent(ctx, t.ns, agentName)
	if err != nil {
		return false, err
	}
	lim, ok, err := budget.LimitsOf(agent.Spec.Budget)
	if err != nil || !ok {
		return true, nil // an invalid budget is the agent's Stalled condition, not the sender's problem
	}
	session, _, _ := unstructured.NestedString(t.obj.Object, "status", "session", "sessionID")
	return a.opts.Budget.Admit(ctx, t.ns, agentName, lim, string(t.obj.GetUID()), session, speaker, text)
}

// budgetExhausted reports whether the conversation was paused by its agent's budget.
func budgetExhausted(obj *unstructured.Unstructured) bool {
	conv := &v1alpha1.Conversation{}
	if runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, conv) != nil {
		return false
	}
	c := meta.FindStatusCondition(conv.Status.Conditions, v1alpha1.ConditionBudgetAvailable)
	return conv.Spec.DesiredState == v1alpha1.ConversationPaused && c != nil && c.Reason == v1alpha1.ReasonBudgetExhausted
}

// budgetHandler is agents/{name}/budget (GET: show) and agents/{name}/budget/topup (POST).
func (a *API) budgetHandler(w http.ResponseWriter, r *http.Request) {
	parts, ok := apiserver.PathPartsFrom(r.Context())
	if !ok || (parts.Rest != "" && parts.Rest != wire.BudgetTopUp) {
		apiserver.WriteError(w, apierrors.NewNotFound(agentsGR, r.URL.Path))
		return
	}
	method := http.MethodGet
	if parts.Rest == wire.BudgetTopUp {
		method = http.MethodPost
	}
	if r.Method != method {
		apiserver.WriteError(w, apierrors.NewMethodNotSupported(agentsGR, r.Method+" budget/"+parts.Rest))
		return
	}
	if a.opts.Budget == nil {
		apiserver.WriteError(w, apierrors.NewServiceUnavailable("this supervisor runs without budgets"))
		return
	}
	ns, name := parts.Namespace, parts.Name
	agent, err := a.readAgent(r.Context(), ns, name)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	var view *wire.BudgetView
	if method == http.MethodGet {
		view, err = a.showBudget(r.Context(), agent)
	} else {
		view, err = a.topUp(r, agent)
	}
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	apiserver.WriteJSON(w, http.StatusOK, view)
}

func noBudget(name string) error {
	return apierrors.NewConflict(agentsGR, name, fmt.Errorf("agent %s sets no budget (spec.budget.usdPerHour); "+
		"top up with --rate to set one", name))
}

func (a *API) showBudget(ctx context.Context, agent *v1alpha1.Agent) (*wire.BudgetView, error) {
	lim, ok, err := budget.LimitsOf(agent.Spec.Budget)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if !ok {
		return nil, noBudget(agent.Name)
	}
	st, err := a.opts.Budget.Snapshot(ctx, agent.Namespace, agent.Name, lim)
	if err != nil {
		return nil, err
	}
	return budgetView(agent.Name, lim, st), nil
}

func budgetView(name string, lim budget.Limits, st *budget.State) *wire.BudgetView {
	return &wire.BudgetView{Agent: name, USDPerHour: lim.Rate.String(), BurstUSD: lim.Capacity.String(),
		MaxWaitSeconds: int64(lim.MaxWait / time.Second), AvailableUSD: st.Bucket.Level.String(),
		AsOf: st.Bucket.AsOf.UTC().Format(time.RFC3339), SpentUSD: st.Spent.String(), ToppedUpUSD: st.ToppedUp.String()}
}

// topUp changes the rate (through the API server, so validation applies), adds funds, and resumes the agent's
// conversations that its budget paused.
func (a *API) topUp(r *http.Request, agent *v1alpha1.Agent) (*wire.BudgetView, error) {
	ctx := r.Context()
	var req wire.TopUpRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf(`top-up body must be {"usd": "N", "usdPerHour": "R"}: %v`, err))
	}
	usd := budget.Micro(0)
	if req.USD != "" {
		var err error
		if usd, err = budget.ParseUSD(req.USD); err != nil {
			return nil, apierrors.NewBadRequest("usd: " + err.Error())
		}
	}
	if req.USD == "" && req.USDPerHour == "" {
		return nil, apierrors.NewBadRequest("a top-up sets usd, usdPerHour or both")
	}
	if req.USDPerHour != "" {
		if _, err := budget.ParseUSD(req.USDPerHour); err != nil {
			return nil, apierrors.NewBadRequest("usdPerHour: " + err.Error())
		}
		updated, err := a.setRate(ctx, agent, req.USDPerHour)
		if err != nil {
			return nil, err
		}
		agent = updated
	}
	lim, ok, err := budget.LimitsOf(agent.Spec.Budget)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if !ok {
		return nil, noBudget(agent.Name)
	}
	st, err := a.opts.Budget.TopUp(ctx, agent.Namespace, agent.Name, lim, usd)
	if err != nil {
		return nil, err
	}
	view := budgetView(agent.Name, lim, st)
	view.Resumed, err = a.resumeExhausted(ctx, agent.Namespace, agent.Name)
	if err != nil {
		return nil, err
	}
	a.log.Info("budget topped up", "namespace", agent.Namespace, "agent", agent.Name, "usd", usd.String(),
		"usdPerHour", lim.Rate.String(), "resumed", view.Resumed)
	return view, nil
}

// setRate writes spec.budget.usdPerHour with a PUT of the agent.
func (a *API) setRate(ctx context.Context, agent *v1alpha1.Agent, rate string) (*v1alpha1.Agent, error) {
	obj, err := a.opts.Store.Get(ctx, agentsPlural, agent.Namespace, agent.Name)
	if err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(obj.Object, rate, "spec", "budget", "usdPerHour"); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out, err := a.callAPI(ctx, http.MethodPut, objectPath(agent.Namespace, agentsPlural, agent.Name), obj.Object, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return toAgent(out)
}

// resumeExhausted sets desired Active on the agent's conversations paused with BudgetExhausted.
func (a *API) resumeExhausted(ctx context.Context, ns, agent string) ([]string, error) {
	list, err := a.opts.Store.List(ctx, conversationsPlural, ns, nil)
	if err != nil {
		return nil, err
	}
	var resumed []string
	for i := range list.Items {
		obj := &list.Items[i]
		if ref, _, _ := unstructured.NestedString(obj.Object, "spec", "agentRef"); ref != agent || !budgetExhausted(obj) {
			continue
		}
		if err := unstructured.SetNestedField(obj.Object, string(v1alpha1.ConversationActive), "spec", "desiredState"); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if _, err := a.callAPI(ctx, http.MethodPut, objectPath(ns, conversationsPlural, obj.GetName()), obj.Object, http.StatusOK); err != nil {
			return resumed, fmt.Errorf("resuming conversation %s: %w", obj.GetName(), err)
		}
		resumed = append(resumed, obj.GetName())
	}
	return resumed, nil
}

func objectPath(ns, plural, name string) string {
	return apischema.APIPath + "/namespaces/" + ns + "/" + plural + "/" + name
}

// exhaustedError is the 409 of a send to a conversation its budget paused.
func exhaustedError(t *target) error {
	agent, _, _ := unstructured.NestedString(t.obj.Object, "spec", "agentRef")
	return conversationError(http.StatusConflict, metav1.StatusReasonConflict, t.name,
		fmt.Sprintf("conversation %s is Paused: agent %s's budget is exhausted; top it up to continue (%s)",
			t.name, agent, t.aictlHint("budget topup", agent+" --usd N")))
}
