package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/monitor/remote"
)

// RemotePoll is how often an attachment with a remote target is reconciled:
// no local event tells about changes on the other supervisor.
const RemotePoll = 5 * time.Second

// remoteProbe is what one pass learnt from the target's supervisor.
type remoteProbe struct {
	// unreachable: the supervisor did not answer; the last known status stands.
	unreachable bool
	// err is the refusal of a supervisor that answered (or a Secret error).
	err   error
	convs []v1alpha1.Conversation
}

// reconcileReachable (remote targets only) asks the target's supervisor,
// through its public API, for the target agent and its conversations, and
// reports TargetReachable: False (TargetUnreachable) naming the address and
// the error when it does not answer, True when it does. It never blocks the
// later phases, so that an outage keeps the last known references and the
// watch loop's follows (which retry on their own).
func (r *MonitorAttachmentReconciler) reconcileReachable(ctx context.Context, s *monitorScope) (reconcile.Result, error) {
	a := s.att
	rs := a.Spec.Target.Supervisor
	poll := reconcile.Result{RequeueAfter: RemotePoll}
	s.remote = &remoteProbe{}
	if r.Remote == nil {
		s.remote.err = stalled(v1alpha1.ReasonNotImplemented, "spec.target.supervisor: this supervisor serves no remote targets")
		setCondition(&a.Status.Conditions, a.Generation, v1alpha1.ConditionTargetReachable, metav1.ConditionUnknown,
			v1alpha1.ReasonNotImplemented, "remote targets are not served")
		return poll, nil
	}
	side, err := r.Remote.Side(a.Namespace, rs)
	if err != nil {
		s.remote.err = err
		setCondition(&a.Status.Conditions, a.Generation, v1alpha1.ConditionTargetReachable, metav1.ConditionUnknown,
			v1alpha1.ReasonDependencyNotReady, fmt.Sprintf("supervisor %s not asked: %v", rs.Address, err))
		return poll, nil
	}
	err = side.Agent(ctx, a.Spec.Target.Agent)
	if err == nil {
		s.remote.convs, err = side.Conversations(ctx, a.Spec.Target.Agent)
	}
	if unreachable(err) {
		s.remote.unreachable = true
		setCondition(&a.Status.Conditions, a.Generation, v1alpha1.ConditionTargetReachable, metav1.ConditionFalse,
			v1alpha1.ReasonTargetUnreachable, fmt.Sprintf("supervisor %s is unreachable: %v", rs.Address, causeOf(err)))
		return poll, nil
	}
	s.remote.err = err
	setCondition(&a.Status.Conditions, a.Generation, v1alpha1.ConditionTargetReachable, metav1.ConditionTrue,
		v1alpha1.ReasonSucceeded, fmt.Sprintf("supervisor %s answers (namespace %q)", rs.Address, side.Namespace()))
	return poll, nil
}

// unreachable reports whether err means the remote API did not answer (as
// opposed to answering with a refusal).
func unreachable(err error) bool {
	return err != nil && (client.IsConnectionError(err) || errors.Is(err, context.DeadlineExceeded) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsUnexpectedServerError(err))
}

func causeOf(err error) error {
	var ce *client.ConnectionError
	if errors.As(err, &ce) {
		return ce.Cause()
	}
	return err
}

// remoteReferences is ReferencesResolved of a remote target from this pass's
// probe: kept as it was while the supervisor is unreachable.
func (r *MonitorAttachmentReconciler) remoteReferences(ctx context.Context, s *monitorScope) (reconcile.Result, error) {
	a, p := s.att, s.remote
	rs := a.Spec.Target.Supervisor
	ns := remote.Namespace(a.Namespace, rs)
	var se *remote.SecretError
	var blocked *blockedError
	switch err := p.err; {
	case p.unreachable:
		if meta.FindStatusCondition(a.Status.Conditions, v1alpha1.ConditionReferencesResolved) == nil {
			c := meta.FindStatusCondition(a.Status.Conditions, v1alpha1.ConditionTargetReachable)
			setCondition(&a.Status.Conditions, a.Generation, v1alpha1.ConditionReferencesResolved, metav1.ConditionUnknown,
				c.Reason, c.Message)
		}
		return reconcile.Result{}, nil
	case errors.As(err, &blocked):
		return reconcile.Result{}, err
	case errors.As(err, &se):
		return reconcile.Result{}, stalled(v1alpha1.ReasonSecretNotFound, "%s", se.Error())
	case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
		return reconcile.Result{}, stalled(v1alpha1.ReasonTokenRejected,
			"spec.target.supervisor.tokenSecret: supervisor %s refused the token of Secret %q for namespace %q: %v",
			rs.Address, rs.TokenSecret, ns, err)
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, stalled(v1alpha1.ReasonTargetNotFound,
			"spec.target.agent: agent %q does not exist in namespace %q on supervisor %s", a.Spec.Target.Agent, ns, rs.Address)
	case err != nil:
		return reconcile.Result{}, transient(v1alpha1.ReasonRetrying, fmt.Errorf("asking supervisor %s: %w", rs.Address, err))
	}
	targets := map[string]*v1alpha1.Conversation{}
	for i := range p.convs {
		c := &p.convs[i]
		if a.Spec.Target.Conversation == "" || c.Name == a.Spec.Target.Conversation {
			targets[c.Name] = c
		}
	}
	if name := a.Spec.Target.Conversation; name != "" && targets[name] == nil {
		return reconcile.Result{}, stalled(v1alpha1.ReasonTargetNotFound,
			"spec.target.conversation: conversation %q of agent %q does not exist in namespace %q on supervisor %s",
			name, a.Spec.Target.Agent, ns, rs.Address)
	}
	if err := r.archiveMonitorConversations(ctx, a, targets); err != nil {
		return reconcile.Result{}, err
	}
	a.Status.Conversations = watched(a.Status.Conversations, targets)
	live := 0
	for i := range a.Status.Conversations {
		mc := &a.Status.Conversations[i]
		t := targets[mc.Target]
		mc.UID, mc.Archived = string(t.UID), t.Spec.DesiredState == v1alpha1.ConversationArchived
		created := t.CreationTimestamp
		mc.Created = &created
		if !mc.Archived {
			live++
		}
	}
	setCondition(&a.Status.Conditions, a.Generation, v1alpha1.ConditionReferencesResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("monitor %q watches agent %q in namespace %q on supervisor %s: %d conversation(s), %d not archived",
			a.Spec.Monitor, a.Spec.Target.Agent, ns, rs.Address, len(targets), live))
	return reconcile.Result{}, nil
}
