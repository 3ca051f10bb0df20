package controllers

import (
	"aicli.dev/aicli/internal/liveguest"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/egress"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/storeclient"
)

// ConversationFinalizer holds a conversation until its container is gone.
const ConversationFinalizer = "aicli.dev/conversation"

// LabelConversationUID carries the conversation's uid on its container, so a
// re-created conversation of the same name never adopts an old container.
const LabelConversationUID = "aicli.dev/conversation-uid"

// Timeouts of the launch path.
const (
	// GuestDialTimeout bounds the wait for a started (or adopted) container's
	// guest to complete its handshake before the run counts as crashed.
	GuestDialTimeout = 20 * time.Second
	// StopGrace is how long a stopping container gets between SIGTERM and SIGKILL.
	StopGrace = 10 * time.Second
)

// EgressPolicies is the supervisor's egress server, seen from the controller.
type EgressPolicies interface {
	SetPolicy(conversationUID string, p egress.Policy)
	RemovePolicy(conversationUID string)
}

// SecretReader reads supervisor-held secrets.
type SecretReader interface {
	Get(namespace, name string) ([]byte, error)
}

// ConversationReconciler converges each Conversation toward its desired state
// (Active, Paused, Archived) with the container runtime, the guest images and
// the side-channel gateway. A crash of any kind is an unplanned pause.
type ConversationReconciler struct {
	Client   *storeclient.Client
	Runtime  runtime.Runtime
	Images   *ImageCache
	Sessions *liveguest.Registry
	// Egress holds each live conversation's egress policy; nil runs without
	// egress (containers still have no network at all).
	Egress EgressPolicies
	// Secrets resolves supervisor-held model credentials.
	Secrets      SecretReader
	DataDir      layout.Dir
	SupervisorID string
	Logger       *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (r *ConversationReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile implements reconcile.Reconciler.
func (r *ConversationReconciler) Reconcile(ctx context.Context, req reconcile.Request) (result reconcile.Result, retErr error) {
	conv := &v1alpha1.Conversation{}
	if err := r.Client.Get(ctx, req.Namespace, req.Name, conv); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	before := conv.Status.DeepCopy()
	defer func() {
		if retErr == nil && conv.DeletionTimestamp == nil {
			retErr = r.writeStatus(ctx, conv, before)
		}
	}()

	if conv.DeletionTimestamp != nil {
		return reconcile.Result{}, r.reconcileDelete(ctx, conv)
	}
	if !slices.Contains(conv.Finalizers, ConversationFinalizer) {
		conv.Finalizers = append(conv.Finalizers, ConversationFinalizer)
		status := conv.Status
		if err := r.Client.Update(ctx, conv); err != nil {
			return reconcile.Result{}, err
		}
		conv.Status = status
	}

	agent := &v1alpha1.Agent{}
	if err := r.Client.Get(ctx, conv.Namespace, conv.Spec.AgentRef, agent); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		r.condition(conv, v1alpha1.ConditionReferencesResolved, metav1.ConditionFalse, v1alpha1.ReasonAgentNotFound,
			fmt.Sprintf("agent %q does not exist in namespace %q", conv.Spec.AgentRef, conv.Namespace))
		// Nothing can run without its agent: make sure nothing does.
		return reconcile.Result{}, r.teardown(ctx, conv, observedStateWithoutAgent(conv))
	}
	r.condition(conv, v1alpha1.ConditionReferencesResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("agent %q exists", agent.Name))

	switch conv.Spec.DesiredState {
	case v1alpha1.ConversationPaused:
		return reconcile.Result{}, r.teardown(ctx, conv, v1alpha1.ConversationPaused)
	case v1alpha1.ConversationArchived:
		return reconcile.Result{}, r.teardown(ctx, conv, v1alpha1.ConversationArchived)
	default:
		return r.reconcileActive(ctx, conv, agent)
	}
}

func observedStateWithoutAgent(conv *v1alpha1.Conversation) v1alpha1.ConversationState {
	if conv.Spec.DesiredState == v1alpha1.ConversationArchived {
		return v1alpha1.ConversationArchived
	}
	return v1alpha1.ConversationPaused
}

// reconcileDelete stops everything the conversation runs and releases the
// finalizer. Its transcript stays readable in the store's history.
func (r *ConversationReconciler) reconcileDelete(ctx context.Context, conv *v1alpha1.Conversation) error {
	if err := r.stopRun(ctx, conv); err != nil {
		return err
	}
	if !slices.Contains(conv.Finalizers, ConversationFinalizer) {
		return nil
	}
	conv.Finalizers = slices.DeleteFunc(conv.Finalizers, func(f string) bool { return f == ConversationFinalizer })
	if err := r.Client.Update(ctx, conv); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

func (r *ConversationReconciler) condition(conv *v1alpha1.Conversation, typ string, status metav1.ConditionStatus, reason, msg string) {
	setCondition(&conv.Status.Conditions, conv.Generation, typ, status, reason, msg)
}

// writeStatus summarises Ready for the desired state, stamps the observed
// generation and writes the status once, when it changed.
func (r *ConversationReconciler) writeStatus(ctx context.Context, conv *v1alpha1.Conversation, before *v1alpha1.ConversationStatus) error {
	deps := []string{v1alpha1.ConditionReferencesResolved}
	if conv.Spec.DesiredState == v1alpha1.ConversationActive {
		deps = append(deps, v1alpha1.ConditionImageReady, v1alpha1.ConditionContainerRunning,
			v1alpha1.ConditionGuestConnected, v1alpha1.ConditionCLIReady)
	}
	summarizeReady(&conv.Status.Conditions, conv.Generation, deps...)
	conv.Status.ObservedGeneration = conv.Generation
	if equality.Semantic.DeepEqual(before, &conv.Status) {
		return nil
	}
	return r.Client.UpdateStatus(ctx, conv)
}
