package controllers

import (
	"aicli.dev/aicli/guest/egress/egresswire"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/egress"
	"aicli.dev/aicli/internal/runtime"
)

// Condition reasons of the conversation lifecycle.
const (
	ReasonBuilding          = "Building"
	ReasonBuildFailed       = "BuildFailed"
	ReasonLaunchFailed      = "LaunchFailed"
	ReasonWaitingForGuest   = "WaitingForGuest"
	ReasonStarting          = "Starting"
	ReasonUnplannedPause    = "UnplannedPause"
	ReasonPaused            = "Paused"
	ReasonArchived          = "Archived"
	ReasonResumeUnsupported = "ResumeUnsupported"
	ReasonHomeMissing       = "HomeMissing"
	ReasonNoSession         = "NoSession"
	ReasonSecretNotFound    = "SecretNotFound"
	ReasonEgressInvalid     = "EgressPolicyInvalid"
)

// maxEgressDenials is how many refused egress attempts a conversation's
// status keeps.
const maxEgressDenials = 10

// guestHome and guestWorkspace are where an agent's durable directories are
// mounted in its containers.
const (
	guestHome      = "/home/agent"
	guestWorkspace = "/workspace"
)

// reconcileActive converges an Active conversation: image → container →
// guest → CLI, one condition each, stopping at the first not yet ready.
func (r *ConversationReconciler) reconcileActive(ctx context.Context, conv *v1alpha1.Conversation, agent *v1alpha1.Agent) (reconcile.Result, error) {
	key := types.NamespacedName{Namespace: conv.Namespace, Name: conv.Name}
	uid := string(conv.UID)

	r.recordDenials(conv)
	image, res, ok := r.reconcileImage(conv, agent)
	if !ok {
		return res, nil
	}
	if err := r.reconcileEgress(conv, agent); err != nil {
		return reconcile.Result{}, nil // reported as a condition; the user must fix the agent
	}
	st, found, err := r.findContainer(ctx, conv)
	if err != nil {
		return reconcile.Result{}, err
	}
	switch {
	case found && !st.Running:
		return reconcile.Result{}, r.unplannedPause(ctx, conv, fmt.Sprintf("container %s exited with code %d", short(st.ID), st.ExitCode))
	case !found && conv.Status.ContainerID != "":
		return reconcile.Result{}, r.unplannedPause(ctx, conv, fmt.Sprintf("container %s is gone", short(conv.Status.ContainerID)))
	case found:
		if err := r.Sessions.Adopt(ctx, key, uid); err != nil {
			return reconcile.Result{}, fmt.Errorf("re-adopting container %s: %w", short(st.ID), err)
		}
		conv.Status.ContainerID = st.ID
	default:
		if err := r.launch(ctx, conv, agent, image); err != nil {
			r.condition(conv, v1alpha1.ConditionContainerRunning, metav1.ConditionFalse, ReasonLaunchFailed, err.Error())
			return reconcile.Result{}, err
		}
	}
	conv.Status.State = v1alpha1.ConversationActive
	r.condition(conv, v1alpha1.ConditionContainerRunning, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("container %s is running", short(conv.Status.ContainerID)))

	pty, conn, connected := r.Sessions.Guest(key, uid)
	if !connected {
		since := r.Sessions.StartedAt()
		if conv.Status.StartedAt != nil && conv.Status.StartedAt.After(since) {
			since = conv.Status.StartedAt.Time
		}
		wait := GuestDialTimeout - r.now().Sub(since)
		if wait <= 0 {
			return reconcile.Result{}, r.unplannedPause(ctx, conv, fmt.Sprintf("guest did not connect within %s", GuestDialTimeout))
		}
		r.condition(conv, v1alpha1.ConditionGuestConnected, metav1.ConditionFalse, ReasonWaitingForGuest, "waiting for the guest to dial in")
		r.condition(conv, v1alpha1.ConditionCLIReady, metav1.ConditionFalse, ReasonWaitingForGuest, "no guest yet")
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	conv.Status.GuestFingerprint = conn.GuestFingerprint()
	r.condition(conv, v1alpha1.ConditionGuestConnected, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "guest completed its handshake")

	return r.reconcileCLI(ctx, conv, agent, key, pty)
}

// reconcileImage resolves the agent's guest image, building it in the
// background when needed.
func (r *ConversationReconciler) reconcileImage(conv *v1alpha1.Conversation, agent *v1alpha1.Agent) (string, reconcile.Result, bool) {
	if agent.Spec.Image != "" {
		r.condition(conv, v1alpha1.ConditionImageReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "using spec.image "+agent.Spec.Image)
		return agent.Spec.Image, reconcile.Result{}, true
	}
	img := r.Images.Get(string(agent.Spec.Harness))
	switch {
	case img.Ref != "":
		r.condition(conv, v1alpha1.ConditionImageReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "image "+img.Ref)
		return img.Ref, reconcile.Result{}, true
	case img.Building:
		r.condition(conv, v1alpha1.ConditionImageReady, metav1.ConditionFalse, ReasonBuilding, "building the guest image: "+img.Progress)
	default:
		r.condition(conv, v1alpha1.ConditionImageReady, metav1.ConditionFalse, ReasonBuildFailed, fmt.Sprint(img.Err))
		return "", reconcile.Result{RequeueAfter: imageRetryAfter}, false
	}
	r.condition(conv, v1alpha1.ConditionContainerRunning, metav1.ConditionFalse, ReasonBuilding, "waiting for the guest image")
	return "", reconcile.Result{}, false
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
func (r *ConversationReconciler) launch(ctx context.Context, conv *v1alpha1.Conversation, agent *v1alpha1.Agent, image string) error {
	home := r.DataDir.AgentHome(agent.Namespace, agent.Name)
	ws := r.DataDir.AgentWorkspace(agent.Namespace, agent.Name)
	if conv.Status.Session != nil && conv.Status.Session.SessionID != "" {
		if _, err := os.Stat(home); errors.Is(err, os.ErrNotExist) {
			r.condition(conv, v1alpha1.ConditionResumable, metav1.ConditionFalse, ReasonHomeMissing,
				fmt.Sprintf("durable home %s was deleted: session %s cannot be resumed; starting a fresh session", home, conv.Status.Session.SessionID))
			conv.Status.Session = nil
		}
	}
	for _, dir := range []string{home, ws} {
		if err := ensureOwnedDir(dir); err != nil {
			return err
		}
	}
	launch, err := r.Sessions.Prepare(ctx, types.NamespacedName{Namespace: conv.Namespace, Name: conv.Name}, string(conv.UID))
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
		Image: image,
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
	r.Logger.Info("conversation container started", "conversation", conv.Namespace+"/"+conv.Name, "container", short(id), "image", image)
	return nil
}

// reconcileCLI starts the CLI in a connected guest (resuming its native
// session when the catalog has one) and reports its execution status.
func (r *ConversationReconciler) reconcileCLI(ctx context.Context, conv *v1alpha1.Conversation, agent *v1alpha1.Agent,
	key types.NamespacedName, pty ptyapi.PTY) (reconcile.Result, error) {
	uid := string(conv.UID)
	info, ok := r.Sessions.Status(uid)
	if !ok {
		var err error
		if info, err = pty.Status(ctx); err != nil {
			return reconcile.Result{}, fmt.Errorf("reading the guest status: %w", err)
		}
		r.Sessions.Record(key, uid, info)
	}
	if info.Harness == "" && !info.Alive && info.ExitCode == nil {
		req := r.startRequest(conv, agent)
		provider, err := r.providerAccess(agent)
		if err != nil {
			r.condition(conv, v1alpha1.ConditionCLIReady, metav1.ConditionFalse, ReasonSecretNotFound, err.Error())
			return reconcile.Result{RequeueAfter: imageRetryAfter}, nil
		}
		req.Provider = provider
		resp, err := pty.Start(ctx, req)
		if err != nil && !errors.Is(err, ptyapi.ErrAlreadyStarted) {
			r.condition(conv, v1alpha1.ConditionCLIReady, metav1.ConditionFalse, ReasonLaunchFailed, err.Error())
			return reconcile.Result{}, fmt.Errorf("starting the CLI: %w", err)
		}
		r.recordStart(conv, agent, resp)
		r.condition(conv, v1alpha1.ConditionCLIReady, metav1.ConditionFalse, ReasonStarting, "the CLI is starting")
		conv.Status.Execution = v1alpha1.ExecutionStatus(ptyapi.StatusStarting)
		return reconcile.Result{}, nil
	}
	if info.Status == ptyapi.StatusExited || (!info.Alive && info.ExitCode != nil) {
		code := -1
		if info.ExitCode != nil {
			code = *info.ExitCode
		}
		return reconcile.Result{}, r.unplannedPause(ctx, conv, fmt.Sprintf("the CLI exited with code %d", code))
	}
	if info.SessionID != "" && (conv.Status.Session == nil || conv.Status.Session.SessionID != info.SessionID) {
		conv.Status.Session = &v1alpha1.SessionRef{Harness: agent.Spec.Harness, SessionID: info.SessionID,
			HomePath: r.DataDir.AgentHome(agent.Namespace, agent.Name)}
	}
	conv.Status.Execution = v1alpha1.ExecutionStatus(info.Status)
	switch info.Status {
	case ptyapi.StatusIdle, ptyapi.StatusBusy, ptyapi.StatusWaitingForInput:
		r.condition(conv, v1alpha1.ConditionCLIReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the CLI is "+string(info.Status))
	default:
		r.condition(conv, v1alpha1.ConditionCLIReady, metav1.ConditionFalse, ReasonStarting, "the CLI is "+string(info.Status))
	}
	r.reconcileResumable(conv)
	return reconcile.Result{}, nil
}

// reconcileEgress installs the agent's egress policy for this conversation:
// its provider endpoint and allow-list, everything else denied. It runs on
// every reconcile, so an edited agent applies to the next connection.
func (r *ConversationReconciler) reconcileEgress(conv *v1alpha1.Conversation, agent *v1alpha1.Agent) error {
	if r.Egress == nil {
		return nil
	}
	policy, err := egress.AgentPolicy(agent.Spec)
	if err != nil {
		r.condition(conv, v1alpha1.ConditionContainerRunning, metav1.ConditionFalse, ReasonEgressInvalid,
			fmt.Sprintf("agent %s: %v", agent.Name, err))
		return err
	}
	r.Egress.SetPolicy(string(conv.UID), policy)
	return nil
}

// recordDenials moves refused egress attempts noted by the egress server into
// the status (the newest maxEgressDenials), so each lands in the history.
func (r *ConversationReconciler) recordDenials(conv *v1alpha1.Conversation) {
	for _, d := range r.Sessions.TakeDenials(string(conv.UID)) {
		r.Logger.Warn("egress denied", "conversation", conv.Namespace+"/"+conv.Name, "target", d.Target, "reason", d.Reason)
		conv.Status.EgressDenials = append(conv.Status.EgressDenials, d)
	}
	if n := len(conv.Status.EgressDenials); n > maxEgressDenials {
		conv.Status.EgressDenials = conv.Status.EgressDenials[n-maxEgressDenials:]
	}
}

// providerAccess is what the CLI gets to reach its model provider: the
// guest's loopback provider port (egress forwards it to spec.provider.endpoint)
// and, for credential Secret, the supervisor-held key.
func (r *ConversationReconciler) providerAccess(agent *v1alpha1.Agent) (*ptyapi.ProviderAccess, error) {
	p := agent.Spec.Provider
	if p.Endpoint == "" && p.Credential != v1alpha1.CredentialSecret {
		return nil, nil
	}
	access := &ptyapi.ProviderAccess{}
	if p.Endpoint != "" {
		access.BaseURL = egresswire.ProviderURL(egresswire.DefaultProviderAddr)
	}
	if p.Credential == v1alpha1.CredentialSecret {
		if r.Secrets == nil || p.SecretName == "" {
			return nil, fmt.Errorf("spec.provider.credential is Secret but spec.provider.secretName is empty")
		}
		key, err := r.Secrets.Get(agent.Namespace, p.SecretName)
		if err != nil {
			return nil, fmt.Errorf("spec.provider.secretName %q: %w (store it with: aicli-supervisor secret set -n %s --name %s)",
				p.SecretName, err, agent.Namespace, p.SecretName)
		}
		access.APIKey = string(key)
	}
	return access, nil
}

func (r *ConversationReconciler) startRequest(conv *v1alpha1.Conversation, agent *v1alpha1.Agent) ptyapi.StartRequest {
	// The working directory is the guest's default (the workspace mount).
	req := ptyapi.StartRequest{
		Harness:      string(agent.Spec.Harness),
		Model:        agent.Spec.Model,
		Env:          map[string]string{},
		Instructions: agent.Spec.Persona,
	}
	if r.Egress != nil {
		for k, v := range egresswire.CLIEnv(egresswire.DefaultProxyAddr) {
			req.Env[k] = v
		}
	}
	for _, e := range agent.Spec.Env {
		req.Env[e.Name] = e.Value
	}
	if s := conv.Status.Session; s != nil && s.SessionID != "" {
		req.ResumeSession = s.SessionID
	} else {
		req.SessionID = uuid.NewString()
	}
	return req
}

// recordStart writes the launch's session reference into the catalog.
func (r *ConversationReconciler) recordStart(conv *v1alpha1.Conversation, agent *v1alpha1.Agent, resp ptyapi.StartResponse) {
	if resp.ResumeUnsupported {
		r.condition(conv, v1alpha1.ConditionResumable, metav1.ConditionFalse, ReasonResumeUnsupported,
			fmt.Sprintf("harness %s cannot resume session %s: started a fresh session", agent.Spec.Harness, conv.Status.Session.SessionID))
	}
	if resp.SessionID != "" {
		conv.Status.Session = &v1alpha1.SessionRef{Harness: agent.Spec.Harness, SessionID: resp.SessionID,
			HomePath: r.DataDir.AgentHome(agent.Namespace, agent.Name)}
	}
}

// reconcileResumable reports whether the catalog holds a session to resume.
func (r *ConversationReconciler) reconcileResumable(conv *v1alpha1.Conversation) {
	if c := findCondition(conv.Status.Conditions, v1alpha1.ConditionResumable); c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == ReasonResumeUnsupported || c.Reason == ReasonHomeMissing) && c.ObservedGeneration == conv.Generation {
		return // keep the honest report of this run's start
	}
	if conv.Status.Session == nil || conv.Status.Session.SessionID == "" {
		r.condition(conv, v1alpha1.ConditionResumable, metav1.ConditionFalse, ReasonNoSession, "no native session recorded yet")
		return
	}
	r.condition(conv, v1alpha1.ConditionResumable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("native session %s on the durable home", conv.Status.Session.SessionID))
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
