package controllers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/toolmount"
)

// guestHome and guestWorkspace are where an agent's durable directories are
// mounted in its containers.
const (
	guestHome      = "/home/agent"
	guestWorkspace = "/workspace"
)

// reconcileImage resolves the agent's guest image, building it in the
// background when needed (the build's end triggers the next reconcile).
func (r *ConversationReconciler) reconcileImage(_ context.Context, s *convScope) (reconcile.Result, error) {
	if s.stop {
		meta.RemoveStatusCondition(&s.conv.Status.Conditions, v1alpha1.ConditionImageReady)
		return reconcile.Result{}, nil
	}
	if s.agent.Spec.Image != "" {
		s.image = s.agent.Spec.Image
		s.set(v1alpha1.ConditionImageReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "using spec.image "+s.image)
		return reconcile.Result{}, nil
	}
	img := r.Images.Get(string(s.agent.Spec.Harness))
	switch {
	case img.Ref != "":
		s.image = img.Ref
		s.set(v1alpha1.ConditionImageReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "image "+img.Ref)
		return reconcile.Result{}, nil
	case img.Building:
		return reconcile.Result{}, waiting(v1alpha1.ReasonBuilding, 0, "building the guest image: %s", img.Progress)
	default:
		return reconcile.Result{}, waiting(v1alpha1.ReasonBuildFailed, imageRetryAfter, "%v", img.Err)
	}
}

// reconcileContainer converges the conversation's container: the running
// one is adopted, none is launched, a dead or vanished one is an unplanned
// pause. With scope.stop it tears the run down instead.
func (r *ConversationReconciler) reconcileContainer(ctx context.Context, s *convScope) (reconcile.Result, error) {
	conv := s.conv
	if s.stop {
		return reconcile.Result{}, r.teardown(ctx, s)
	}
	st, found, err := r.findContainer(ctx, conv)
	if err != nil {
		return reconcile.Result{}, err
	}
	switch {
	case found && !st.Running:
		return reconcile.Result{}, unplannedPause("container %s exited with code %d", short(st.ID), st.ExitCode)
	case !found && conv.Status.ContainerID != "":
		return reconcile.Result{}, unplannedPause("container %s is gone", short(conv.Status.ContainerID))
	case found:
		if err := r.Guests.Adopt(ctx, s.key, string(conv.UID)); err != nil {
			return reconcile.Result{}, fmt.Errorf("re-adopting container %s: %w", short(st.ID), err)
		}
		conv.Status.ContainerID = st.ID
	default:
		if err := r.launch(ctx, s); err != nil {
			return reconcile.Result{}, transient(v1alpha1.ReasonLaunchFailed, err)
		}
	}
	conv.Status.State = v1alpha1.ConversationActive
	s.set(v1alpha1.ConditionContainerRunning, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("container %s is running", short(conv.Status.ContainerID)))
	return reconcile.Result{}, nil
}

// findContainer returns the conversation's container, found by its uid label.
// Extra containers (a crash between two creates) are removed.
func (r *ConversationReconciler) findContainer(ctx context.Context, conv *v1alpha1.Conversation) (runtime.ContainerState, bool, error) {
	states, err := r.Runtime.List(ctx, map[string]string{runtime.LabelSupervisor: r.SupervisorID, LabelConversationUID: string(conv.UID)})
	if err != nil {
		return runtime.ContainerState{}, false, err
	}
	if len(states) == 0 {
		return runtime.ContainerState{}, false, nil
	}
	sort.Slice(states, func(i, j int) bool { return states[i].CreatedAt.After(states[j].CreatedAt) })
	for _, extra := range states[1:] {
		_ = r.Runtime.Remove(ctx, extra.ID)
	}
	return states[0], true, nil
}

// launch prepares the side channel and starts a new container for the conversation.
func (r *ConversationReconciler) launch(ctx context.Context, s *convScope) error {
	conv, agent := s.conv, s.agent
	home := r.DataDir.AgentHome(agent.Namespace, agent.Name)
	ws := r.DataDir.AgentWorkspace(agent.Namespace, agent.Name)
	if conv.Status.Session != nil && conv.Status.Session.SessionID != "" {
		if _, err := os.Stat(home); errors.Is(err, os.ErrNotExist) {
			s.resumeNote.reason = v1alpha1.ReasonHomeMissing
			s.resumeNote.msg = fmt.Sprintf("durable home %s was deleted: session %s cannot be resumed; starting a fresh session",
				home, conv.Status.Session.SessionID)
			conv.Status.Session = nil
		}
	}
	for _, dir := range []string{home, ws} {
		if err := ensureOwnedDir(dir); err != nil {
			return err
		}
	}
	launch, err := r.Guests.Prepare(ctx, s.key, string(conv.UID))
	if err != nil {
		return fmt.Errorf("preparing the side channel: %w", err)
	}
	env := make([]string, 0, len(launch.Env))
	for k, v := range launch.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	spec := runtime.ContainerSpec{
		Name:  containerName(conv),
		Image: s.image,
		Labels: map[string]string{
			runtime.LabelSupervisor:   r.SupervisorID,
			runtime.LabelNamespace:    conv.Namespace,
			runtime.LabelAgent:        agent.Name,
			runtime.LabelConversation: conv.Name,
			LabelConversationUID:      string(conv.UID),
		},
		Env: env,
		Mounts: []runtime.Mount{
			{HostPath: home, ContainerPath: guestHome},
			{HostPath: ws, ContainerPath: guestWorkspace},
			{HostPath: launch.HostDir, ContainerPath: launch.ContainerDir},
		},
		Network: runtime.NetworkNone,
	}
	if s.toolsDir != "" {
		spec.Mounts = append(spec.Mounts, runtime.Mount{HostPath: s.toolsDir, ContainerPath: toolmount.MountPath, ReadOnly: true})
	}
	if agent.Spec.Resources.MemoryMiB > 0 {
		spec.MemoryBytes = int64(agent.Spec.Resources.MemoryMiB) << 20
	}
	if agent.Spec.Resources.Pids > 0 {
		spec.PidsLimit = int64(agent.Spec.Resources.Pids)
	}
	id, err := r.Runtime.Create(ctx, spec)
	if err != nil {
		return fmt.Errorf("creating the container: %w", err)
	}
	if err := r.Runtime.Start(ctx, id); err != nil {
		_ = r.Runtime.Remove(context.WithoutCancel(ctx), id)
		return fmt.Errorf("starting the container: %w", err)
	}
	now := metav1.NewTime(r.now())
	conv.Status.ContainerID, conv.Status.StartedAt = id, &now
	conv.Status.GuestFingerprint, conv.Status.Execution = "", ""
	r.Logger.Info("conversation container started", "conversation", s.key.String(), "container", short(id), "image", s.image)
	return nil
}

// teardown brings a conversation to a stopped state (Paused or Archived):
// the CLI is asked to exit so it flushes its native session store, the
// container is stopped and removed, the side channel released. The catalog
// keeps the session reference.
func (r *ConversationReconciler) teardown(ctx context.Context, s *convScope) error {
	conv := s.conv
	state := s.stoppedState()
	wasRunning := conv.Status.ContainerID != "" || conv.Status.State == v1alpha1.ConversationActive
	if err := r.stopRun(ctx, conv); err != nil {
		return err
	}
	if state == v1alpha1.ConversationPaused && wasRunning {
		now := metav1.NewTime(r.now())
		conv.Status.PausedAt = &now
	}
	conv.Status.State = state
	conv.Status.ContainerID, conv.Status.GuestFingerprint, conv.Status.Execution = "", "", ""
	reason, msg := s.stoppedReason()
	c := meta.FindStatusCondition(conv.Status.Conditions, v1alpha1.ConditionContainerRunning)
	switch {
	case s.crash != "":
		s.set(v1alpha1.ConditionContainerRunning, metav1.ConditionFalse, v1alpha1.ReasonUnplannedPause, s.crash)
	case c != nil && c.Reason == v1alpha1.ReasonUnplannedPause && state == v1alpha1.ConversationPaused:
		// Keep the crash report until the conversation runs again.
		s.set(v1alpha1.ConditionContainerRunning, metav1.ConditionFalse, c.Reason, c.Message)
	default:
		s.set(v1alpha1.ConditionContainerRunning, metav1.ConditionFalse, reason, "no container: "+msg)
	}
	return nil
}

// stopRun stops the CLI, the container and the side channel of a conversation,
// whatever state they are in. Idempotent.
func (r *ConversationReconciler) stopRun(ctx context.Context, conv *v1alpha1.Conversation) error {
	uid := string(conv.UID)
	if r.Egress != nil {
		r.Egress.RemovePolicy(uid)
	}
	if r.Leases != nil {
		r.Leases.Release(uid)
	}
	if pty, ok := r.Guests.PTY(uid); ok {
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
	if err := r.toolDirs().Remove(uid); err != nil {
		return fmt.Errorf("removing the tools directory: %w", err)
	}
	return r.Guests.Forget(uid)
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

func containerName(conv *v1alpha1.Conversation) string {
	return fmt.Sprintf("aicli-%s-%s-%s", conv.Namespace, conv.Name, string(conv.UID)[:8])
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
