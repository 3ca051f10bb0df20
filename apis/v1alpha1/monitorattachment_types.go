package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MatchMode says how a keyword matches transcript text.
// +kubebuilder:validation:Enum=Substring;Word
type MatchMode string

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
	// (human, agent, tool, or injected:<monitor>); empty means all.
	// +optional
	// +listType=set
	Speakers []string `json:"speakers,omitempty"`
}

// MonitorMode is WatchOnly (analyse and alert) or Advise (may inject).
// +kubebuilder:validation:Enum=WatchOnly;Advise
type MonitorMode string

// BreakerSpec configures the monitor's trip-open circuit breaker.
type BreakerSpec struct {
	// maxConsecutiveHumanless trips the breaker after this many wake→inject
	// cycles without a human turn in between.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=5
	MaxConsecutiveHumanless int32 `json:"maxConsecutiveHumanless,omitempty"`
	// maxInjectionsPerHour is the rate backstop.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +kubebuilder:default=20
	MaxInjectionsPerHour int32 `json:"maxInjectionsPerHour,omitempty"`
}

// MonitorAttachmentSpec attaches a monitor agent to a target.
type MonitorAttachmentSpec struct {
	// monitor names the monitoring agent in this namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Monitor string `json:"monitor"`
	// target is the watched agent, or one of its conversations.
	// +required
	Target TargetRef `json:"target"`
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
	// consecutiveHumanless counts wake→inject cycles since the last human turn.
	// +optional
	ConsecutiveHumanless int32 `json:"consecutiveHumanless,omitempty"`
	// lastWakeTime is when the monitor last woke.
	// +optional
	LastWakeTime *metav1.Time `json:"lastWakeTime,omitempty"`
	// monitorConversation names the monitor's conversation.
	// +optional
	MonitorConversation string `json:"monitorConversation,omitempty"`
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
