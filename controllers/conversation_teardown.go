package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/runtime"
)

// teardown brings a conversation to a stopped state (Paused or Archived):
// the CLI is asked to exit so it flushes its native session store, the
// container is stopped and removed, the side channel released. The catalog
// keeps the session reference.
func (r *ConversationReconciler) teardown(ctx context.Context, conv *v1alpha1.Conversation, state v1alpha1.ConversationState) error {
	wasRunning := conv.Status.ContainerID != "" || conv.Status.State == v1alpha1.ConversationActive
	if err := r.stopRun(ctx, conv); err != nil {
		return err
	}
	if wasRunning || conv.Status.State != state {
		now := metav1.NewTime(r.now())
		if state == v1alpha1.ConversationPaused && wasRunning {
			conv.Status.PausedAt = &now
		}
	}
	conv.Status.State = state
	conv.Status.ContainerID, conv.Status.GuestFingerprint, conv.Status.Execution = "", "", ""
	reason := ReasonPaused
	if state == v1alpha1.ConversationArchived {
		reason = ReasonArchived
	}
	if c := findCondition(conv.Status.Conditions, v1alpha1.ConditionContainerRunning); c == nil || c.Reason != ReasonUnplannedPause {
		r.condition(conv, v1alpha1.ConditionContainerRunning, metav1.ConditionFalse, reason, "no container: the conversation is "+string(state))
	}
	r.condition(conv, v1alpha1.ConditionGuestConnected, metav1.ConditionFalse, reason, "no guest while "+string(state))
	r.condition(conv, v1alpha1.ConditionCLIReady, metav1.ConditionFalse, reason, "no CLI while "+string(state))
	meta.RemoveStatusCondition(&conv.Status.Conditions, v1alpha1.ConditionImageReady)
	r.reconcileResumable(conv)
	return nil
}

// stopRun stops the CLI, the container and the side channel of a conversation,
// whatever state they are in. Idempotent.
func (r *ConversationReconciler) stopRun(ctx context.Context, conv *v1alpha1.Conversation) error {
	uid := string(conv.UID)
	if r.Egress != nil {
		r.Egress.RemovePolicy(uid)
	}
	if pty, ok := r.Sessions.PTY(uid); ok {
		r.recordFinalSession(ctx, conv, pty)
		stopCtx, cancel := context.WithTimeout(ctx, StopGrace)
		if err := pty.Stop(stopCtx); err != nil && !errors.Is(err, ptyapi.ErrNotStarted) && !errors.Is(err, ptyapi.ErrExited) {
			r.Logger.Warn("stopping the CLI gracefully failed; stopping the container", "conversation", conv.Namespace+"/"+conv.Name, "err", err)
		}
		cancel()
	}
	states, err := r.Runtime.List(ctx, map[string]string{runtime.LabelSupervisor: r.SupervisorID, LabelConversationUID: uid})
	if err != nil {
		return err
	}
	for _, st := range states {
		if st.Running {
			if err := r.Runtime.Stop(ctx, st.ID, StopGrace); err != nil {
				return fmt.Errorf("stopping container %s: %w", short(st.ID), err)
			}
		}
		if err := r.Runtime.Remove(ctx, st.ID); err != nil {
			return fmt.Errorf("removing container %s: %w", short(st.ID), err)
		}
	}
	return r.Sessions.Forget(uid)
}

// unplannedPause records a crash (container death, guest exit, CLI exit, a
// guest that never dialled) as a pause: the run is torn down, the desired
// state flips to Paused so nothing restarts in a loop, and the session
// reference stays for a resume.
func (r *ConversationReconciler) unplannedPause(ctx context.Context, conv *v1alpha1.Conversation, why string) error {
	r.Logger.Warn("unplanned pause", "conversation", conv.Namespace+"/"+conv.Name, "reason", why)
	r.condition(conv, v1alpha1.ConditionContainerRunning, metav1.ConditionFalse, ReasonUnplannedPause, why)
	if err := r.teardown(ctx, conv, v1alpha1.ConversationPaused); err != nil {
		return err
	}
	status := conv.Status
	conv.Spec.DesiredState = v1alpha1.ConversationPaused
	if err := r.Client.Update(ctx, conv); err != nil {
		return err
	}
	conv.Status = status
	// The spec changed generation: restamp the crash condition for it.
	r.condition(conv, v1alpha1.ConditionContainerRunning, metav1.ConditionFalse, ReasonUnplannedPause, why)
	return nil
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	return meta.FindStatusCondition(conds, typ)
}

// recordFinalSession reads the guest's status one last time before the CLI is
// stopped, so a session id the CLI reported since the last reconcile (CLIs
// that cannot pre-assign ids are discovered after their first message) is in
// the catalog for the resume.
func (r *ConversationReconciler) recordFinalSession(ctx context.Context, conv *v1alpha1.Conversation, pty ptyapi.PTY) {
	statusCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := pty.Status(statusCtx)
	if err != nil || info.SessionID == "" {
		return
	}
	if conv.Status.Session == nil || conv.Status.Session.SessionID != info.SessionID {
		conv.Status.Session = &v1alpha1.SessionRef{Harness: v1alpha1.Harness(info.Harness), SessionID: info.SessionID,
			HomePath: r.DataDir.AgentHome(conv.Namespace, conv.Spec.AgentRef)}
	}
}
