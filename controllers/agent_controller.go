package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/storeclient"
)

// AgentFinalizer holds an agent until its conversations are wound down.
const AgentFinalizer = "aicli.dev/agent"

// GuestUID and GuestGID own an agent's durable directories: the CLI inside the
// container runs as this non-root user.
const (
	GuestUID = 1000
	GuestGID = 1000
)

// AgentReconciler validates an agent's references, materialises its durable
// home and workspace under the data dir, and reports Ready.
type AgentReconciler struct {
	Client       *storeclient.Client
	DataDir      layout.Dir
	SupervisorID string
	Logger       *slog.Logger
	// Budget, when set, is observed into status.budget.
	Budget AgentBudget
	// Mail, when set, is observed into status.inboxUnread.
	Mail AgentMail
}

// phases are the agent's sub-reconcilers, in order, each owning one condition.
func (r *AgentReconciler) phases() []phase[*v1alpha1.Agent] {
	return []phase[*v1alpha1.Agent]{
		{condition: v1alpha1.ConditionReferencesResolved, run: r.reconcileReferences},
		{condition: v1alpha1.ConditionHomeReady, run: r.reconcileHome, always: true},
	}
}

// Reconcile implements reconcile.Reconciler.
func (r *AgentReconciler) Reconcile(ctx context.Context, req reconcile.Request) (_ reconcile.Result, retErr error) {
	agent := &v1alpha1.Agent{}
	if err := r.Client.Get(ctx, req.Namespace, req.Name, agent); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	before := agent.Status.DeepCopy()
	var out phaseOutcome
	defer func() {
		// One status write on every exit, errors included.
		if agent.DeletionTimestamp == nil {
			markProgress(&agent.Status.Conditions, agent.Generation, out)
		}
		retErr = errors.Join(retErr, r.writeStatus(ctx, agent, before))
	}()

	if agent.DeletionTimestamp != nil {
		return r.reconcileDelete(ctx, agent)
	}
	if !slices.Contains(agent.Finalizers, AgentFinalizer) {
		agent.Finalizers = append(agent.Finalizers, AgentFinalizer)
		status := agent.Status
		if err := r.Client.Update(ctx, agent); err != nil {
			return reconcile.Result{}, err
		}
		agent.Status = status
	}
	agent.Status.HomeSupervisor = r.SupervisorID
	out = runPhases(ctx, agent, &agent.Status.Conditions, agent.Generation, false, r.phases())
	r.observeBudget(ctx, agent)
	r.observeMail(ctx, agent)
	return out.result, out.err
}

// reconcileReferences checks that every peer the agent names exists. A
// missing peer stalls the agent (only the user can create it); the peer's
// creation re-reconciles it.
func (r *AgentReconciler) reconcileReferences(ctx context.Context, agent *v1alpha1.Agent) (reconcile.Result, error) {
	var missing []string
	for _, p := range namedPeers(&agent.Spec) {
		if p == agent.Name || slices.Contains(missing, p) {
			continue
		}
		err := r.Client.Get(ctx, agent.Namespace, p, &v1alpha1.Agent{})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, p)
		case err != nil:
			return reconcile.Result{}, err
		}
	}
	if len(missing) > 0 {
		return reconcile.Result{}, stalled(v1alpha1.ReasonPeerNotFound,
			"spec.peers names agents that do not exist in namespace %q: %v", agent.Namespace, missing)
	}
	setCondition(&agent.Status.Conditions, agent.Generation, v1alpha1.ConditionReferencesResolved, metav1.ConditionTrue,
		v1alpha1.ReasonSucceeded, "every referenced agent exists")
	return reconcile.Result{}, nil
}

// reconcileHome creates the durable home and workspace, owned by the guest
// user. It runs even while a peer is missing: the home does not depend on it.
func (r *AgentReconciler) reconcileHome(_ context.Context, agent *v1alpha1.Agent) (reconcile.Result, error) {
	home := r.DataDir.AgentHome(agent.Namespace, agent.Name)
	ws := r.DataDir.AgentWorkspace(agent.Namespace, agent.Name)
	for _, dir := range []string{home, ws} {
		if err := ensureOwnedDir(dir); err != nil {
			return reconcile.Result{}, transient(v1alpha1.ReasonHomeUnavailable, fmt.Errorf("agent %s/%s: %w", agent.Namespace, agent.Name, err))
		}
	}
	agent.Status.HomePath, agent.Status.WorkspacePath = home, ws
	setCondition(&agent.Status.Conditions, agent.Generation, v1alpha1.ConditionHomeReady, metav1.ConditionTrue,
		v1alpha1.ReasonSucceeded, "durable home and workspace exist")
	return reconcile.Result{}, nil
}

func ensureOwnedDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := os.Chown(dir, GuestUID, GuestGID); err != nil && !errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("chown %s: %w", dir, err)
	}
	return nil
}

// reconcileDelete pauses the agent's live conversations first (their CLIs
// flush their native session stores), then releases the finalizer. The
// durable directories stay on disk: re-creating an agent of the same name
// finds its home again.
func (r *AgentReconciler) reconcileDelete(ctx context.Context, agent *v1alpha1.Agent) (reconcile.Result, error) {
	if !slices.Contains(agent.Finalizers, AgentFinalizer) {
		return reconcile.Result{}, nil
	}
	var convs v1alpha1.ConversationList
	if err := r.Client.List(ctx, agent.Namespace, &convs, nil); err != nil {
		return reconcile.Result{}, err
	}
	waiting := 0
	for i := range convs.Items {
		conv := &convs.Items[i]
		if conv.Spec.AgentRef != agent.Name {
			continue
		}
		if conv.Spec.DesiredState == v1alpha1.ConversationActive {
			conv.Spec.DesiredState = v1alpha1.ConversationPaused
			if err := r.Client.Update(ctx, conv); err != nil {
				return reconcile.Result{}, err
			}
			r.Logger.Info("pausing a live conversation of a deleted agent", "agent", agent.Namespace+"/"+agent.Name, "conversation", conv.Name)
		}
		if conv.Status.State == v1alpha1.ConversationActive || conv.Status.ContainerID != "" {
			waiting++
		}
	}
	if waiting > 0 {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	agent.Finalizers = slices.DeleteFunc(agent.Finalizers, func(f string) bool { return f == AgentFinalizer })
	err := r.Client.Update(ctx, agent)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

func (r *AgentReconciler) writeStatus(ctx context.Context, agent *v1alpha1.Agent, before *v1alpha1.AgentStatus) error {
	if agent.DeletionTimestamp != nil {
		return nil
	}
	summarizeReady(&agent.Status.Conditions, agent.Generation, v1alpha1.ConditionReferencesResolved, v1alpha1.ConditionHomeReady)
	agent.Status.ObservedGeneration = agent.Generation
	if equality.Semantic.DeepEqual(before, &agent.Status) {
		return nil
	}
	// A conflict means a newer version exists; the error requeues the request.
	return r.Client.UpdateStatus(ctx, agent)
}

// peerReferrers maps a changed agent to the agents in its namespace that name
// it as a peer, so they re-check their references.
func peerReferrers(c *storeclient.Client) MapFunc {
	return func(ctx context.Context, obj *unstructured.Unstructured) []reconcile.Request {
		var list v1alpha1.AgentList
		if err := c.List(ctx, obj.GetNamespace(), &list, nil); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, a := range list.Items {
			if slices.Contains(namedPeers(&a.Spec), obj.GetName()) {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Name}})
			}
		}
		return reqs
	}
}

// namedPeers lists the agents a spec names as peers, in either direction.
func namedPeers(spec *v1alpha1.AgentSpec) []string {
	if spec.Peers == nil {
		return nil
	}
	var out []string
	for _, set := range []*v1alpha1.PeerSet{spec.Peers.SendTo, spec.Peers.ReceiveFrom} {
		if set != nil {
			out = append(out, set.Agents...)
		}
	}
	return out
}
