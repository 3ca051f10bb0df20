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
	// ConditionLeaseHeld reports that a grant's capability lease is held.
	ConditionLeaseHeld = "LeaseHeld"
	// ConditionBreakerClosed reports that a monitor's circuit breaker is closed.
	ConditionBreakerClosed = "BreakerClosed"
)

// Condition reasons.
const (
	ReasonSucceeded          = "Succeeded"
	ReasonProgressing        = "Progressing"
	ReasonNotImplemented     = "NotImplemented"
	ReasonInvalidSpec        = "InvalidSpec"
	ReasonAgentNotFound      = "AgentNotFound"
	ReasonPeerNotFound       = "PeerNotFound"
	ReasonTargetNotFound     = "TargetNotFound"
	ReasonHomeUnavailable    = "HomeUnavailable"
	ReasonDependencyNotReady = "DependencyNotReady"
	ReasonDeleting           = "Deleting"
)
