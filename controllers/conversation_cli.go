package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/grants"
)

// reconcileGuest waits for the container's guest to complete its handshake;
// one that does not dial in within GuestDialTimeout is an unplanned pause.
func (r *ConversationReconciler) reconcileGuest(_ context.Context, s *convScope) (reconcile.Result, error) {
	if s.stop {
		reason, msg := s.stoppedReason()
		s.set(v1alpha1.ConditionGuestConnected, metav1.ConditionFalse, reason, "no guest: "+msg)
		return reconcile.Result{}, nil
	}
	pty, fingerprint, connected := r.Guests.Guest(s.key, string(s.conv.UID))
	if !connected {
		since := r.Guests.StartedAt()
		if st := s.conv.Status.StartedAt; st != nil && st.After(since) {
			since = st.Time
		}
		wait := GuestDialTimeout - r.now().Sub(since)
		if wait <= 0 {
			return reconcile.Result{}, unplannedPause("guest did not connect within %s", GuestDialTimeout)
		}
		// The registry triggers a reconcile when the guest connects.
		return reconcile.Result{}, waiting(v1alpha1.ReasonWaitingForGuest, wait, "waiting for the guest to dial in")
	}
	s.pty = pty
	s.conv.Status.GuestFingerprint = fingerprint
	s.set(v1alpha1.ConditionGuestConnected, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "guest completed its handshake")
	return reconcile.Result{}, nil
}

// reconcileCLI starts the CLI in the connected guest (resuming its native
// session when the catalog has one) and reports its execution status.
func (r *ConversationReconciler) reconcileCLI(ctx context.Context, s *convScope) (reconcile.Result, error) {
	conv, agent := s.conv, s.agent
	if s.stop {
		reason, msg := s.stoppedReason()
		s.set(v1alpha1.ConditionCLIReady, metav1.ConditionFalse, reason, "no CLI: "+msg)
		return reconcile.Result{}, nil
	}
	uid := string(conv.UID)
	info, ok := r.Guests.Status(uid)
	if !ok {
		var err error
		if info, err = s.pty.Status(ctx); err != nil {
			return reconcile.Result{}, fmt.Errorf("reading the guest status: %w", err)
		}
		r.Guests.Record(s.key, uid, info)
	}
	if info.Harness == "" && !info.Alive && info.ExitCode == nil {
		req := r.startRequest(s)
		resp, err := s.pty.Start(ctx, req)
		if err != nil && !errors.Is(err, ptyapi.ErrAlreadyStarted) {
			return reconcile.Result{}, transient(v1alpha1.ReasonLaunchFailed, fmt.Errorf("starting the CLI: %w", err))
		}
		r.recordStart(s, resp)
		conv.Status.Execution = v1alpha1.ExecutionStatus(ptyapi.StatusStarting)
		// The registry triggers a reconcile when the guest's status changes.
		return reconcile.Result{}, waiting(v1alpha1.ReasonStarting, 0, "the CLI is starting")
	}
	if info.Status == ptyapi.StatusExited || (!info.Alive && info.ExitCode != nil) {
		code := -1
		if info.ExitCode != nil {
			code = *info.ExitCode
		}
		return reconcile.Result{}, unplannedPause("the CLI exited with code %d", code)
	}
	if info.SessionID != "" && (conv.Status.Session == nil || conv.Status.Session.SessionID != info.SessionID) {
		conv.Status.Session = &v1alpha1.SessionRef{Harness: agent.Spec.Harness, SessionID: info.SessionID,
			HomePath: r.DataDir.AgentHome(agent.Namespace, agent.Name)}
	}
	conv.Status.Execution = v1alpha1.ExecutionStatus(info.Status)
	switch info.Status {
	case ptyapi.StatusIdle, ptyapi.StatusBusy, ptyapi.StatusWaitingForInput:
		s.set(v1alpha1.ConditionCLIReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the CLI is "+string(info.Status))
		return reconcile.Result{}, nil
	default:
		return reconcile.Result{}, waiting(v1alpha1.ReasonStarting, 0, "the CLI is %s", info.Status)
	}
}

// startRequest is the launch part of the rehydration bundle: harness, model,
// standing instructions, environment, provider access and the session to
// resume (or a fresh pre-assigned one).
func (r *ConversationReconciler) startRequest(s *convScope) ptyapi.StartRequest {
	agent := s.agent
	// The working directory is the guest's default (the workspace mount).
	req := ptyapi.StartRequest{
		Harness:      string(agent.Spec.Harness),
		Model:        agent.Spec.Model,
		Env:          map[string]string{},
		Instructions: joinSections(agent.Spec.Persona, toolInstructions(s.tools)),
		Tools:        grants.Names(s.tools),
		Provider:     s.provider,
	}
	if r.Egress != nil {
		for k, v := range egresswire.CLIEnv(egresswire.DefaultProxyAddr) {
			req.Env[k] = v
		}
	}
	for _, e := range agent.Spec.Env {
		req.Env[e.Name] = e.Value
	}
	if sess := s.conv.Status.Session; sess != nil && sess.SessionID != "" {
		req.ResumeSession = sess.SessionID
	} else {
		req.SessionID = uuid.NewString()
	}
	return req
}

// recordStart writes the launch's session reference into the catalog.
func (r *ConversationReconciler) recordStart(s *convScope, resp ptyapi.StartResponse) {
	conv, agent := s.conv, s.agent
	if resp.ResumeUnsupported {
		s.resumeNote.reason = v1alpha1.ReasonResumeUnsupported
		s.resumeNote.msg = fmt.Sprintf("harness %s cannot resume session %s: started a fresh session",
			agent.Spec.Harness, conv.Status.Session.SessionID)
	}
	if resp.SessionID != "" {
		conv.Status.Session = &v1alpha1.SessionRef{Harness: agent.Spec.Harness, SessionID: resp.SessionID,
			HomePath: r.DataDir.AgentHome(agent.Namespace, agent.Name)}
	}
}

// reconcileResumable reports whether the catalog holds a session to resume.
// It runs on every pass (it only reports), keeping this run's honest launch
// report (home deleted, resume unsupported) until the spec changes.
func (r *ConversationReconciler) reconcileResumable(_ context.Context, s *convScope) (reconcile.Result, error) {
	conv := s.conv
	if s.resumeNote.reason != "" {
		s.set(v1alpha1.ConditionResumable, metav1.ConditionFalse, s.resumeNote.reason, s.resumeNote.msg)
		return reconcile.Result{}, nil
	}
	if c := meta.FindStatusCondition(conv.Status.Conditions, v1alpha1.ConditionResumable); c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == v1alpha1.ReasonResumeUnsupported || c.Reason == v1alpha1.ReasonHomeMissing) && c.ObservedGeneration == conv.Generation {
		return reconcile.Result{}, nil
	}
	if conv.Status.Session == nil || conv.Status.Session.SessionID == "" {
		s.set(v1alpha1.ConditionResumable, metav1.ConditionFalse, v1alpha1.ReasonNoSession, "no native session recorded yet")
		return reconcile.Result{}, nil
	}
	s.set(v1alpha1.ConditionResumable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("native session %s on the durable home", conv.Status.Session.SessionID))
	return reconcile.Result{}, nil
}

// joinSections joins the non-empty instruction sections with a blank line.
func joinSections(sections ...string) string {
	var out []string
	for _, s := range sections {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, "\n\n")
}
