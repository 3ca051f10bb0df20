package v1alpha1

// Condition types. Ready summarises; Reconciling and Stalled are present only
// while true; every other type tracks one dependency.
const (
	// ConditionReady summarises whether the object is fully reconciled and usable.
	ConditionReady = "Ready"
	// ConditionReconciling is True while the controller is still converging.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the controller cannot progress until a user acts.
	ConditionStalled = "Stalled"

	// ConditionHomeReady reports that the agent's durable home and workspace exist.
	ConditionHomeReady = "HomeReady"
	// ConditionReferencesResolved reports that every object the spec names exists.
	ConditionReferencesResolved = "ReferencesResolved"
	// ConditionAccessResolved reports that a conversation's model credential
	// resolved and its egress policy is installed.
	ConditionAccessResolved = "AccessResolved"
	// ConditionImageReady reports that the agent's guest image is built.
	ConditionImageReady = "ImageReady"
	// ConditionContainerRunning reports that the conversation's container runs.
	ConditionContainerRunning = "ContainerRunning"
	// ConditionGuestConnected reports that the guest completed its handshake.
	ConditionGuestConnected = "GuestConnected"
	// ConditionCLIReady reports that the AI CLI is up and showing its prompt.
	ConditionCLIReady = "CLIReady"
	// ConditionResumable reports that a paused conversation can be resumed natively.
	ConditionResumable = "Resumable"
	// ConditionToolsReady reports that a conversation's granted tools are mounted.
	ConditionToolsReady = "ToolsReady"
	// ConditionLeaseHeld reports that a grant's (or a conversation's) capability lease is held.
	ConditionLeaseHeld = "LeaseHeld"
	// ConditionBudgetAvailable reports that the agent's budget covers the
	// conversation's next message (no message is held).
	ConditionBudgetAvailable = "BudgetAvailable"
	// ConditionMailDelivered reports that the agent's unread mail has reached the live conversation (or, with
	// spec.peers.delivery NotifyOnly, that the agent was told about it); False while mail waits (docs/mail.md).
	ConditionMailDelivered = "MailDelivered"
	// ConditionBreakerClosed reports that a monitor's circuit breaker is closed.
	ConditionBreakerClosed = "BreakerClosed"
	// ConditionTriggerReady reports that a monitor's trigger compiled (keywords, modes, speakers).
	ConditionTriggerReady = "TriggerReady"
	// ConditionTargetReachable reports that the supervisor homing a monitor's
	// remote target (spec.target.supervisor) answers its public API.
	ConditionTargetReachable = "TargetReachable"
)

// Condition reasons shared by every kind.
const (
	// ReasonSucceeded: the condition's dependency is ready.
	ReasonSucceeded = "Succeeded"
	// ReasonProgressing: not observed yet, or still converging.
	ReasonProgressing = "Progressing"
	// ReasonRetrying: the last attempt failed with a transient error; it is retried with backoff.
	ReasonRetrying = "Retrying"
	// ReasonNotImplemented: this supervisor does not converge the kind yet.
	ReasonNotImplemented = "NotImplemented"
	// ReasonInvalidSpec: the spec cannot be satisfied as written.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonAgentNotFound: a referenced agent does not exist.
	ReasonAgentNotFound = "AgentNotFound"
	// ReasonPeerNotFound: spec.peers names an agent that does not exist.
	ReasonPeerNotFound = "PeerNotFound"
	// ReasonTargetNotFound: a monitor's target does not exist.
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonTargetUnreachable: the supervisor homing a monitor's remote target cannot be reached.
	ReasonTargetUnreachable = "TargetUnreachable"
	// ReasonTokenRejected: the remote supervisor refused the token of spec.target.supervisor.tokenSecret (401/403).
	ReasonTokenRejected = "TokenRejected"
	// ReasonHumanlessCycles: a monitor's breaker tripped at maxConsecutiveHumanless wake→inject cycles.
	ReasonHumanlessCycles = "HumanlessCycles"
	// ReasonWakeRate: a monitor's breaker tripped at its rate backstop.
	ReasonWakeRate = "WakeRate"
	// ReasonRearmed: a human re-armed the monitor's breaker.
	ReasonRearmed = "Rearmed"
	// ReasonHomeUnavailable: the agent's durable home or workspace cannot be created.
	ReasonHomeUnavailable = "HomeUnavailable"
	// ReasonDependencyNotReady: something the object needs is not ready.
	ReasonDependencyNotReady = "DependencyNotReady"
	// ReasonDeleting: the object is being deleted.
	ReasonDeleting = "Deleting"
)

// Condition reasons of the conversation lifecycle.
const (
	// ReasonSecretNotFound: spec.provider.secretName of the agent names no supervisor-held secret.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretUnreadable: the supervisor could not read the agent's secret; it is retried.
	ReasonSecretUnreadable = "SecretUnreadable"
	// ReasonEgressInvalid: the agent's egress policy cannot be installed.
	ReasonEgressInvalid = "EgressPolicyInvalid"
	// ReasonBuilding: the guest image is being built.
	ReasonBuilding = "Building"
	// ReasonBuildFailed: the guest image build failed; it is retried.
	ReasonBuildFailed = "BuildFailed"
	// ReasonLaunchFailed: creating or starting the container, or starting the CLI, failed.
	ReasonLaunchFailed = "LaunchFailed"
	// ReasonWaitingForGuest: the container runs and its guest has not dialled in yet.
	ReasonWaitingForGuest = "WaitingForGuest"
	// ReasonStarting: the CLI was launched and has not shown its prompt yet.
	ReasonStarting = "Starting"
	// ReasonUnplannedPause: the run ended without being asked to (a crash is a pause).
	ReasonUnplannedPause = "UnplannedPause"
	// ReasonPaused: the conversation is paused.
	ReasonPaused = "Paused"
	// ReasonArchived: the conversation is archived.
	ReasonArchived = "Archived"
	// ReasonResumeUnsupported: the harness cannot resume its native session; a fresh one started.
	ReasonResumeUnsupported = "ResumeUnsupported"
	// ReasonHomeMissing: the durable home holding the native session was deleted.
	ReasonHomeMissing = "HomeMissing"
	// ReasonNoSession: no native session reference is recorded yet.
	ReasonNoSession = "NoSession"
)

// Condition reasons of grants, tools and leases.
const (
	// ReasonToolConflict: two grants of one agent name the same tool; the older grant keeps it.
	ReasonToolConflict = "ToolConflict"
	// ReasonToolBinaryMissing: the aicli-tool binary to mount is not built.
	ReasonToolBinaryMissing = "ToolBinaryMissing"
	// ReasonNoLiveConversation: no live conversation of the subject holds a lease.
	ReasonNoLiveConversation = "NoLiveConversation"
	// ReasonLeaseExpired: the lease was not renewed (the container ended).
	ReasonLeaseExpired = "LeaseExpired"
	// ReasonRevoked: the grant changed or was deleted; older capabilities are refused.
	ReasonRevoked = "Revoked"
	// ReasonParentRevoked: the grant a delegated grant narrows is gone or narrower.
	ReasonParentRevoked = "ParentRevoked"
	// ReasonInlineBackend: a grant's tool defines its own host-side backend,
	// secrets or cost, which only a ToolClass may; the tool is not mounted.
	ReasonInlineBackend = "InlineBackend"
	// ReasonClassNotFound: a grant's tool names a ToolClass that does not exist.
	ReasonClassNotFound = "ClassNotFound"
	// ReasonClassNotAllowed: the named ToolClass does not admit the grant's namespace.
	ReasonClassNotAllowed = "ClassNotAllowed"
	// ReasonWiderThanClass: a grant's tool asks for more than its ToolClass gives.
	ReasonWiderThanClass = "WiderThanClass"
)

// Condition reasons of the budget (docs/budget.md).
const (
	// ReasonBudgetWait: messages are held until the bucket accrues enough; the message says how long.
	ReasonBudgetWait = "BudgetWait"
	// ReasonBudgetExhausted: accrual cannot cover the next message within maxWaitSeconds; the conversation
	// was paused until a top-up (aictl budget topup).
	ReasonBudgetExhausted = "BudgetExhausted"
	// ReasonNoBudget: the agent sets no budget; nothing is held.
	ReasonNoBudget = "NoBudget"
)

// Condition reasons of mail delivery (docs/mail.md).
const (
	// ReasonMailPending: unread mail waits for the CLI to be IDLE (or for the next chunk's turn).
	ReasonMailPending = "MailPending"
	// ReasonMailNotified: NotifyOnly delivery told the agent about its unread mail; it reads it with mail-inbox.
	ReasonMailNotified = "MailNotified"
)
