package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConversationState is a conversation's lifecycle state (docs/concepts.md#lifecycle).
// +kubebuilder:validation:Enum=Active;Paused;Archived
type ConversationState string

// Conversation states.
const (
	// ConversationActive: a live container and PTY.
	ConversationActive ConversationState = "Active"
	// ConversationPaused: no live PTY, resumable from the recorded session reference.
	ConversationPaused ConversationState = "Paused"
	// ConversationArchived: terminated and kept for the record.
	ConversationArchived ConversationState = "Archived"
)

// ExecutionStatus is what the conversation's CLI is doing.
// +kubebuilder:validation:Enum=BUSY;IDLE;WAITING_FOR_INPUT;STARTING;EXITED
type ExecutionStatus string

// ConversationSpec is the desired state of a conversation.
type ConversationSpec struct {
	// agentRef names the Agent, in the same namespace, this conversation belongs
	// to. It cannot change after creation.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	AgentRef string `json:"agentRef"`
	// desiredState is where the user wants the conversation: Active, Paused or Archived.
	// +optional
	// +kubebuilder:default=Active
	DesiredState ConversationState `json:"desiredState,omitempty"`
}

// SessionRef is the resume state recorded in the catalog (docs/concepts.md#continuity).
type SessionRef struct {
	// harness is the CLI that wrote the session.
	// +optional
	Harness Harness `json:"harness,omitempty"`
	// sessionID is the CLI's native session reference.
	// +optional
	SessionID string `json:"sessionID,omitempty"`
	// homePath is the durable home holding the CLI's native session store.
	// +optional
	HomePath string `json:"homePath,omitempty"`
}

// EgressDenial is one refused attempt of the conversation's container to
// reach the network (default-deny egress, docs/concepts.md#egress).
type EgressDenial struct {
	// time is when the attempt was refused (the first of a burst).
	Time metav1.Time `json:"time"`
	// target is the destination (host:port, or "provider").
	Target string `json:"target"`
	// reason says why it was refused.
	Reason string `json:"reason"`
}

// ConversationStatus is what the supervisor observed about the conversation.
type ConversationStatus struct {
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions hold Ready and one condition per dependency.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// state is the observed lifecycle state.
	// +optional
	State ConversationState `json:"state,omitempty"`
	// execution is the CLI's BUSY/IDLE/WAITING_FOR_INPUT status while live.
	// +optional
	Execution ExecutionStatus `json:"execution,omitempty"`
	// containerID is the live container, if any.
	// +optional
	ContainerID string `json:"containerID,omitempty"`
	// session is the native session reference used to resume.
	// +optional
	Session *SessionRef `json:"session,omitempty"`
	// guestFingerprint is the guest's negotiated key fingerprint for the live run.
	// +optional
	GuestFingerprint string `json:"guestFingerprint,omitempty"`
	// startedAt is when the current or last run started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// pausedAt is when the conversation was last paused (planned or not).
	// +optional
	PausedAt *metav1.Time `json:"pausedAt,omitempty"`
	// transcriptCursor is the cursor of the last committed transcript event.
	// +optional
	TranscriptCursor int64 `json:"transcriptCursor,omitempty"`
	// egressDenials are the most recent refused egress attempts (at most 10),
	// newest last; each change is an event in the conversation's history.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	EgressDenials []EgressDenial `json:"egressDenials,omitempty"`
	// spendUSD is the conversation's measured spend (its CLI session's cost in
	// the spend index), as a decimal string.
	// +optional
	SpendUSD string `json:"spendUSD,omitempty"`
	// heldMessages counts messages held by the agent's budget, waiting for delivery.
	// +optional
	HeldMessages int32 `json:"heldMessages,omitempty"`
}

// Conversation is one PTY session of an agent, kept in the catalog across its
// Active → Paused → Archived lifecycle.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=conversations,scope=Namespaced,shortName=conv
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.spec.agentRef`
// +kubebuilder:printcolumn:name="Desired",type=string,JSONPath=`.spec.desiredState`,priority=1
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Execution",type=string,JSONPath=`.status.execution`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Container",type=string,JSONPath=`.status.containerID`,priority=1
// +kubebuilder:printcolumn:name="Spend",type=string,JSONPath=`.status.spendUSD`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Conversation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the conversation's desired state.
	// +required
	Spec ConversationSpec `json:"spec"`
	// status is what the supervisor observed.
	// +optional
	Status ConversationStatus `json:"status,omitempty"`
}

// ConversationList is a list of Conversations.
//
// +kubebuilder:object:root=true
type ConversationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Conversation `json:"items"`
}
