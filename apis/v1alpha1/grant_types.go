package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SecretRef points at a supervisor-held secret. The secret itself never
// enters a container (docs/concepts.md#capabilities-and-secrets).
type SecretRef struct {
	// name of the supervisor-held secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// key within the secret.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
	// env is the variable the host-side tool backend receives the secret in.
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Env string `json:"env,omitempty"`
}

// ExecBackend runs a tool as a host-side command.
type ExecBackend struct {
	// command is the executable run on the supervisor host.
	// +required
	// +kubebuilder:validation:MinLength=1
	Command string `json:"command"`
	// args are passed before the caller's arguments.
	// +optional
	Args []string `json:"args,omitempty"`
}

// HTTPBackend runs a tool by calling an HTTP endpoint from the supervisor.
type HTTPBackend struct {
	// url is called with the tool invocation as JSON.
	// +required
	// +kubebuilder:validation:Pattern=`^https?://`
	URL string `json:"url"`
	// method is the HTTP method.
	// +optional
	// +kubebuilder:validation:Enum=GET;POST;PUT
	// +kubebuilder:default=POST
	Method string `json:"method,omitempty"`
}

// ToolBackend says how the supervisor executes a tool; exactly one is set.
type ToolBackend struct {
	// exec runs a host-side command.
	// +optional
	Exec *ExecBackend `json:"exec,omitempty"`
	// http calls an HTTP endpoint.
	// +optional
	HTTP *HTTPBackend `json:"http,omitempty"`
}

// Attenuation narrows a capability (docs/concepts.md#capabilities-and-secrets: authority only diminishes).
type Attenuation struct {
	// pinnedParams fixes tool parameters the agent cannot override.
	// +optional
	PinnedParams map[string]string `json:"pinnedParams,omitempty"`
	// maxCallsPerHour caps invocations.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxCallsPerHour int32 `json:"maxCallsPerHour,omitempty"`
	// expiresAt ends the capability.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
}

// ToolGrant grants one tool, mounted into the container as a CLI executable.
type ToolGrant struct {
	// name is the executable name the CLI runs.
	// +required
	// +kubebuilder:validation:Pattern=`^[a-z0-9][-a-z0-9_.]*$`
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`
	// backend executes the tool on the supervisor host.
	// +required
	Backend ToolBackend `json:"backend"`
	// secretRefs are handed to the backend, never to the container.
	// +optional
	SecretRefs []SecretRef `json:"secretRefs,omitempty"`
	// attenuation narrows this tool's capability.
	// +optional
	Attenuation *Attenuation `json:"attenuation,omitempty"`
}

// RecallAccess is what a recall-bucket grant allows.
// +kubebuilder:validation:Enum=Read;ReadWrite
type RecallAccess string

// BucketGrant grants a recall bucket.
type BucketGrant struct {
	// name of the bucket.
	// +required
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// access is Read or ReadWrite.
	// +optional
	// +kubebuilder:default=Read
	Access RecallAccess `json:"access,omitempty"`
}

// TargetRef names an agent, or one of its conversations, in the same namespace.
type TargetRef struct {
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
}

// GrantSpec is the set of capabilities delegated to one agent.
type GrantSpec struct {
	// subject names the agent, in the same namespace, receiving the capabilities.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Subject string `json:"subject"`
	// tools are granted tools, mounted as CLI executables.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	Tools []ToolGrant `json:"tools,omitempty"`
	// recall are granted recall buckets.
	// +optional
	// +listType=map
	// +listMapKey=name
	Recall []BucketGrant `json:"recall,omitempty"`
	// peers are agents the subject may message (in addition to its own peer policy).
	// +optional
	// +listType=set
	Peers []string `json:"peers,omitempty"`
	// observe are targets whose transcripts the subject may read.
	// +optional
	Observe []TargetRef `json:"observe,omitempty"`
	// inject are targets the subject may send messages into.
	// +optional
	Inject []TargetRef `json:"inject,omitempty"`
	// attenuation narrows every capability of this grant.
	// +optional
	Attenuation *Attenuation `json:"attenuation,omitempty"`
}

// GrantStatus is what the supervisor observed about the grant.
type GrantStatus struct {
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions hold Ready and LeaseHeld.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// leaseExpiresAt is when the current lease ends unless renewed.
	// +optional
	LeaseExpiresAt *metav1.Time `json:"leaseExpiresAt,omitempty"`
	// issuedAt is when capabilities were last issued.
	// +optional
	IssuedAt *metav1.Time `json:"issuedAt,omitempty"`
	// revokedAt is when capabilities were last revoked.
	// +optional
	RevokedAt *metav1.Time `json:"revokedAt,omitempty"`
}

// Grant delegates capabilities (tools, recall buckets, peers, observe/inject)
// to an agent.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=grants,scope=Namespaced,shortName=gr
// +kubebuilder:printcolumn:name="Subject",type=string,JSONPath=`.spec.subject`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Grant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the set of delegated capabilities.
	// +required
	Spec GrantSpec `json:"spec"`
	// status is what the supervisor observed.
	// +optional
	Status GrantStatus `json:"status,omitempty"`
}

// GrantList is a list of Grants.
//
// +kubebuilder:object:root=true
type GrantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Grant `json:"items"`
}
