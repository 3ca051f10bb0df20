package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels of a monitor conversation: the attachment it serves and the target
// conversation it watches.
const (
	LabelMonitorAttachment = "aicli.dev/monitor-attachment"
	LabelMonitorTarget     = "aicli.dev/monitor-target"
)

// MatchMode says how a keyword matches transcript text.
// +kubebuilder:validation:Enum=Substring;Word
type MatchMode string

// Match modes.
const (
	// MatchSubstring matches the keyword anywhere, also inside a longer word.
	MatchSubstring MatchMode = "Substring"
	// MatchWord matches only whole words (regexp \b semantics: at each end a
	// text edge or a non-alphanumeric character).
	MatchWord MatchMode = "Word"
)

// Keyword is one trigger keyword.
type Keyword struct {
	// text is the keyword.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Text string `json:"text"`
	// mode is Substring or Word (whole-word match).
	// +optional
	// +kubebuilder:default=Substring
	Mode MatchMode `json:"mode,omitempty"`
}

// TriggerSpec says when a monitor wakes (docs/concepts.md#monitors).
type TriggerSpec struct {
	// keywords wake the monitor when any matches.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	Keywords []Keyword `json:"keywords"`
	// caseSensitive makes matching case-sensitive.
	// +optional
	CaseSensitive bool `json:"caseSensitive,omitempty"`
	// speakers limits matching to transcript events of these speakers
	// (human, agent, tool, unattributed, injected:<monitor> or mail:<agent>);
	// empty means all. unattributed is a user turn nobody sent (the CLI
	// wrote it); it is never human.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^(human|agent|tool|unattributed|injected:[a-z0-9]([-a-z0-9]*[a-z0-9])?|mail:[a-z0-9]([-a-z0-9]*[a-z0-9])?)$`
	Speakers []string `json:"speakers,omitempty"`
}

// MonitorMode is WatchOnly (analyse and alert) or Advise (may inject).
// +kubebuilder:validation:Enum=WatchOnly;Advise
type MonitorMode string

// Monitor modes.
const (
	MonitorWatchOnly MonitorMode = "WatchOnly"
	MonitorAdvise    MonitorMode = "Advise"
)

// RateBackstop trips the breaker when the monitor wakes too often, human or not.
type RateBackstop struct {
	// wakes is the most wakes allowed within the window.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +kubebuilder:default=20
	Wakes int32 `json:"wakes,omitempty"`
	// windowMinutes is the sliding window's length.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1440
	// +kubebuilder:default=60
	WindowMinutes int32 `json:"windowMinutes,omitempty"`
}

// BreakerSpec configures the monitor's trip-open circuit breaker.
type BreakerSpec struct {
	// maxConsecutiveHumanless trips the breaker after this many wake→inject
	// cycles without a human turn in between.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=5
	MaxConsecutiveHumanless int32 `json:"maxConsecutiveHumanless,omitempty"`
	// rateBackstop trips the breaker at too many wakes in a window.
	// +optional
	// +kubebuilder:default={}
	RateBackstop RateBackstop `json:"rateBackstop,omitempty"`
}

// RemoteSupervisor is another supervisor, reached through its public API.
type RemoteSupervisor struct {
	// address is the supervisor's API URL (https://host:port).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Address string `json:"address"`
	// tokenSecret names the supervisor-held Secret (this namespace) holding a
	// bearer token of the remote supervisor, bound to the target's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	TokenSecret string `json:"tokenSecret"`
	// namespace is the target's namespace on the remote supervisor (default:
	// this attachment's namespace).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// caSecret names a Secret holding the remote API's CA certificate (PEM),
	// when it is not trusted by the system.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	CASecret string `json:"caSecret,omitempty"`
}

// MonitorTarget is the watched agent, or one of its conversations, on this
// supervisor or another one.
type MonitorTarget struct {
	// agent names the target agent.
	// +required
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Agent string `json:"agent"`
	// conversation narrows the target to one conversation.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Conversation string `json:"conversation,omitempty"`
	// supervisor, when set, is the remote supervisor homing the target.
	// +optional
	Supervisor *RemoteSupervisor `json:"supervisor,omitempty"`
}

// MonitorAttachmentSpec attaches a monitor agent to a target.
type MonitorAttachmentSpec struct {
	// monitor names the monitoring agent in this namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Monitor string `json:"monitor"`
	// target is the watched agent, or one of its conversations, possibly on
	// another supervisor.
	// +required
	Target MonitorTarget `json:"target"`
	// trigger says when the monitor wakes.
	// +required
	Trigger TriggerSpec `json:"trigger"`
	// mode is WatchOnly or Advise.
	// +optional
	// +kubebuilder:default=Advise
	Mode MonitorMode `json:"mode,omitempty"`
	// breaker configures the circuit breaker.
	// +optional
	// +kubebuilder:default={}
	Breaker BreakerSpec `json:"breaker,omitempty"`
}

// MonitorAttachmentStatus is what the supervisor observed about the attachment.
type MonitorAttachmentStatus struct {
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions hold Ready and BreakerClosed. A tripped breaker stays open
	// until a human re-arms it.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// consecutiveHumanless counts wake→inject cycles since the last human
	// message in a target conversation.
	// +optional
	ConsecutiveHumanless int32 `json:"consecutiveHumanless,omitempty"`
	// wakes counts the wakes within the rate backstop's window.
	// +optional
	Wakes int32 `json:"wakes,omitempty"`
	// recentWakes are the times of the wakes within the window (at most the
	// backstop's wakes): the sliding window survives restarts.
	// +optional
	// +kubebuilder:validation:MaxItems=10000
	RecentWakes []metav1.Time `json:"recentWakes,omitempty"`
	// lastWake is when the monitor last woke.
	// +optional
	LastWake *metav1.Time `json:"lastWake,omitempty"`
	// trippedAt is when the breaker tripped; it stays open until a human
	// re-arms it (aictl monitor rearm).
	// +optional
	TrippedAt *metav1.Time `json:"trippedAt,omitempty"`
	// trippedReason says why it tripped.
	// +optional
	TrippedReason string `json:"trippedReason,omitempty"`
	// pausesPending names the conversations a trip pauses. It is written
	// with the trip and cleared once both are paused, so a trip interrupted
	// by a crash finishes its pauses when the supervisor comes back.
	// +optional
	PausesPending *TripPauses `json:"pausesPending,omitempty"`
	// conversations are the watched target conversations, each with its
	// monitor conversation and how far its transcript was evaluated.
	// +optional
	// +listType=map
	// +listMapKey=target
	Conversations []MonitoredConversation `json:"conversations,omitempty"`
}

// TripPauses are the two conversations a trip pauses.
type TripPauses struct {
	// target names the target conversation (on the target's supervisor).
	Target string `json:"target"`
	// monitor names the monitor's conversation for it, if it has one.
	// +optional
	Monitor string `json:"monitor,omitempty"`
}

// MonitoredConversation is one target conversation the monitor watches.
type MonitoredConversation struct {
	// target names the target conversation.
	Target string `json:"target"`
	// uid is the target conversation's uid on the supervisor homing it.
	// +optional
	UID string `json:"uid,omitempty"`
	// archived is true once the target conversation is archived: it is no
	// longer followed.
	// +optional
	Archived bool `json:"archived,omitempty"`
	// created is the target conversation's creationTimestamp on the
	// supervisor homing it: one created before the attachment is watched
	// from when the attachment first saw it, not from its beginning.
	// +optional
	Created *metav1.Time `json:"created,omitempty"`
	// monitor names the monitor's conversation for it (once it woke).
	// +optional
	Monitor string `json:"monitor,omitempty"`
	// cursor is the last transcript cursor evaluated.
	// +optional
	Cursor int64 `json:"cursor,omitempty"`
	// lastWake is when this target last woke the monitor.
	// +optional
	LastWake *metav1.Time `json:"lastWake,omitempty"`
}

// MonitorAttachment makes one agent watch another's transcripts for keywords
// and inject advice, guarded by a circuit breaker (docs/concepts.md#monitors).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=monitorattachments,scope=Namespaced,shortName=ma
// +kubebuilder:printcolumn:name="Monitor",type=string,JSONPath=`.spec.monitor`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.agent`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Breaker",type=string,JSONPath=`.status.conditions[?(@.type=="BreakerClosed")].status`
// +kubebuilder:printcolumn:name="Humanless",type=integer,JSONPath=`.status.consecutiveHumanless`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MonitorAttachment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the attachment's desired state.
	// +required
	Spec MonitorAttachmentSpec `json:"spec"`
	// status is what the supervisor observed.
	// +optional
	Status MonitorAttachmentStatus `json:"status,omitempty"`
}

// MonitorAttachmentList is a list of MonitorAttachments.
//
// +kubebuilder:object:root=true
type MonitorAttachmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MonitorAttachment `json:"items"`
}
