package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/egress"
	"aicli.dev/aicli/internal/gateway"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/transcript"
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

// LiveGuests is the live-guest registry (liveguest.Registry) as the
// conversation controller drives it.
type LiveGuests interface {
	// Prepare readies the side channel for a new container's guest.
	Prepare(ctx context.Context, key types.NamespacedName, uid string) (*gateway.Launch, error)
	// Adopt listens for the guest of a container found running at start.
	Adopt(ctx context.Context, key types.NamespacedName, uid string) error
	// Guest returns the connected guest's PTY and key fingerprint.
	Guest(key types.NamespacedName, uid string) (ptyapi.PTY, string, bool)
	// StartedAt is when the registry (the supervisor) started.
	StartedAt() time.Time
	// Status is the guest's last observed status; Record stores one read directly.
	Status(uid string) (ptyapi.StatusInfo, bool)
	Record(key types.NamespacedName, uid string, info ptyapi.StatusInfo)
	// PTY returns the live PTY, if any.
	PTY(uid string) (ptyapi.PTY, bool)
	// Forget releases everything held for the conversation.
	Forget(uid string) error
	// TakeDenials returns the refused egress attempts noted since the last call.
	TakeDenials(uid string) []v1alpha1.EgressDenial
}

// ConversationReconciler converges each Conversation toward its desired state
// (Active, Paused, Archived) with the container runtime, the guest images and
// the side-channel gateway, through an ordered list of phases, each owning
// one condition. A crash of any kind is an unplanned pause.
type ConversationReconciler struct {
	Client  *storeclient.Client
	Runtime runtime.Runtime
	Images  *ImageCache
	Guests  LiveGuests
	// Egress holds each live conversation's egress policy; nil runs without
	// egress (containers still have no network at all).
	Egress EgressPolicies
	// Secrets resolves supervisor-held model credentials.
	Secrets SecretReader
	// ToolBinary is the aicli-tool binary linked into each conversation's
	// tools directory; Leases mints and renews the capabilities behind them.
	// Without them an agent with granted tools waits (ToolsReady=False).
	ToolBinary   string
	Leases       CapabilityLeases
	DataDir      layout.Dir
	SupervisorID string
	Logger       *slog.Logger
	// Budget holds and releases messages under the agents' budgets; nil runs without budgets.
	Budget Budget
	// Mail delivers the agent's unread mail into its live conversation; nil runs without mail.
	Mail Mailbox
	// Attribution, when set, learns that delivered mail is spoken by mail:<sender>.
	Attribution *transcript.Attribution
	// Now is the clock (default time.Now).
	Now func() time.Time

	// notified remembers, per conversation uid, the last mail a NotifyOnly notice covered.
	notified notifiedMail
}

func (r *ConversationReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// phases are the conversation's sub-reconcilers, in order. Each handles both
// directions: converging toward a live run, and (scope.stop) toward none.
func (r *ConversationReconciler) phases() []phase[*convScope] {
	return []phase[*convScope]{
		{condition: v1alpha1.ConditionReferencesResolved, run: r.reconcileReferences},
		{condition: v1alpha1.ConditionAccessResolved, run: r.reconcileAccess},
		{condition: v1alpha1.ConditionToolsReady, run: r.reconcileTools},
		{condition: v1alpha1.ConditionImageReady, run: r.reconcileImage},
		{condition: v1alpha1.ConditionContainerRunning, run: r.reconcileContainer},
		{condition: v1alpha1.ConditionGuestConnected, run: r.reconcileGuest},
		{condition: v1alpha1.ConditionLeaseHeld, run: r.reconcileLease},
		{condition: v1alpha1.ConditionCLIReady, run: r.reconcileCLI},
		{condition: v1alpha1.ConditionBudgetAvailable, run: r.reconcileBudget},
		{condition: v1alpha1.ConditionMailDelivered, run: r.reconcileMail},
		{condition: v1alpha1.ConditionResumable, run: r.reconcileResumable, always: true},
	}
}

// Reconcile implements reconcile.Reconciler.
func (r *ConversationReconciler) Reconcile(ctx context.Context, req reconcile.Request) (_ reconcile.Result, retErr error) {
	conv := &v1alpha1.Conversation{}
	if err := r.Client.Get(ctx, req.Namespace, req.Name, conv); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	before := conv.Status.DeepCopy()
	var out phaseOutcome
	defer func() {
		// One status write on every exit, errors included.
		if conv.DeletionTimestamp == nil {
			markProgress(&conv.Status.Conditions, conv.Generation, out)
		}
		retErr = errors.Join(retErr, r.writeStatus(ctx, conv, before))
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
	out = r.reconcileNormal(ctx, &convScope{conv: conv, key: types.NamespacedName{Namespace: conv.Namespace, Name: conv.Name}})
	return out.result, out.err
}

// reconcileNormal runs the phases toward the desired state. Three verdicts
// turn the pass around into a teardown pass: a stalled Active conversation
// (nothing runs that the user's definition cannot satisfy; it starts once
// fixed), an unplanned pause (the desired state flips to Paused so that
// nothing restarts in a loop), and an exhausted budget (a planned pause until
// a top-up resumes it).
func (r *ConversationReconciler) reconcileNormal(ctx context.Context, s *convScope) phaseOutcome {
	conds, phases := &s.conv.Status.Conditions, r.phases()
	s.stop = !s.desiredActive()
	out := runPhases(ctx, s, conds, s.conv.Generation, s.stop, phases)
	var crash *unplannedPauseError
	var exhausted *budgetPauseError
	switch {
	case errors.As(out.err, &exhausted):
		r.Logger.Info("budget exhausted: pausing", "conversation", s.key.String(), "why", exhausted.why)
		if err := r.flipToPaused(ctx, s.conv); err != nil {
			return phaseOutcome{err: err}
		}
		s.stop, s.stopReason, s.stopWhy = true, v1alpha1.ReasonBudgetExhausted, exhausted.why
		return runPhases(ctx, s, conds, s.conv.Generation, true, phases)
	case errors.As(out.err, &crash):
		r.Logger.Warn("unplanned pause", "conversation", s.key.String(), "reason", crash.why)
		if err := r.flipToPaused(ctx, s.conv); err != nil {
			return phaseOutcome{err: err}
		}
		s.stop, s.crash = true, crash.why
		return runPhases(ctx, s, conds, s.conv.Generation, true, phases)
	case out.blocked != nil && out.blocked.kind == blockStalled && !s.stop:
		s.stop = true
		s.stopReason, s.stopWhy = out.blocked.reason, out.blocked.msg
		return runPhases(ctx, s, conds, s.conv.Generation, true, phases)
	}
	return out
}

// unplannedPauseError is a phase's verdict that the run ended by itself.
type unplannedPauseError struct{ why string }

func (e *unplannedPauseError) Error() string { return "unplanned pause: " + e.why }

func unplannedPause(format string, args ...any) error {
	return &unplannedPauseError{why: fmt.Sprintf(format, args...)}
}

// flipToPaused records a crash in the spec: desired Paused, keeping the
// status gathered so far.
func (r *ConversationReconciler) flipToPaused(ctx context.Context, conv *v1alpha1.Conversation) error {
	status := conv.Status
	conv.Spec.DesiredState = v1alpha1.ConversationPaused
	if err := r.Client.Update(ctx, conv); err != nil {
		return err
	}
	conv.Status = status
	return nil
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

// writeStatus summarises Ready for the desired state, stamps the observed
// generation and writes the status once, when it changed.
func (r *ConversationReconciler) writeStatus(ctx context.Context, conv *v1alpha1.Conversation, before *v1alpha1.ConversationStatus) error {
	if conv.DeletionTimestamp == nil {
		deps := []string{v1alpha1.ConditionReferencesResolved}
		if conv.Spec.DesiredState == v1alpha1.ConversationActive || conv.Spec.DesiredState == "" {
			deps = append(deps, v1alpha1.ConditionAccessResolved, v1alpha1.ConditionToolsReady, v1alpha1.ConditionImageReady,
				v1alpha1.ConditionContainerRunning, v1alpha1.ConditionGuestConnected, v1alpha1.ConditionLeaseHeld, v1alpha1.ConditionCLIReady)
		}
		summarizeReady(&conv.Status.Conditions, conv.Generation, deps...)
		conv.Status.ObservedGeneration = conv.Generation
	}
	if equality.Semantic.DeepEqual(before, &conv.Status) {
		return nil
	}
	err := r.Client.UpdateStatus(ctx, conv)
	if apierrors.IsNotFound(err) && conv.DeletionTimestamp != nil {
		return nil // deleted once its finalizer went
	}
	return err
}
