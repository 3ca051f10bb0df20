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
	// namespace holds the secret. Empty means the namespace of the Grant that
	// uses the tool, so each tenant supplies its own value; a secret tenants
	// must not set belongs in a namespace only cluster admins write.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// env is the variable an exec backend receives the secret in.
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +kubebuilder:validation:MaxLength=128
	Env string `json:"env,omitempty"`
	// header is the request header an http backend sends the secret in.
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9-]+$`
	// +kubebuilder:validation:MaxLength=128
	Header string `json:"header,omitempty"`
	// prefix is put before the secret in the header value (for example "Bearer ").
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Prefix string `json:"prefix,omitempty"`
}

// ExecBackend runs a tool as a host-side command.
type ExecBackend struct {
	// command is the executable run on the supervisor host: an absolute path.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Command string `json:"command"`
	// args are passed before the caller's arguments.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Args []string `json:"args,omitempty"`
}

// HTTPBackend runs a tool by calling an HTTP endpoint from the supervisor.
type HTTPBackend struct {
	// url is called with the tool invocation as JSON.
	// +required
	// +kubebuilder:validation:Pattern=`^https?://`
	// +kubebuilder:validation:MaxLength=2048
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
	// +kubebuilder:validation:MaxProperties=32
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
// What runs on the host is the named ToolClass, which only cluster admins
// write; the grant may only narrow it.
type ToolGrant struct {
	// name is the executable name the CLI runs.
	// +required
	// +kubebuilder:validation:Pattern=`^[a-z0-9][-a-z0-9_.]*$`
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`
	// className names the ToolClass (cluster-scoped) that runs the tool on the
	// supervisor host. The class must list the grant's namespace, or no
	// namespace at all.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	ClassName string `json:"className,omitempty"`
	// backend is no longer accepted in a Grant: host-side backends live in a
	// ToolClass. Admission refuses a grant that sets it; a stored grant that
	// still carries one is Stalled and its tool is not mounted.
	// +optional
	Backend *ToolBackend `json:"backend,omitempty"`
	// usage is the one-line usage the CLI is told (instruction file, --help);
	// empty means the class's.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Usage string `json:"usage,omitempty"`
	// secretRefs is no longer accepted in a Grant: a ToolClass names its secrets.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	SecretRefs []SecretRef `json:"secretRefs,omitempty"`
	// timeoutSeconds bounds one call, at most the class's; empty means the class's.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
	// costUSD is no longer accepted in a Grant: a ToolClass sets the cost per call.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]{1,6})?$`
	CostUSD string `json:"costUSD,omitempty"`
	// parameters narrows the class's parameters: the only `--NAME=VALUE`
	// options a caller may pass (a subset of the class's, when it declares any).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9][-A-Za-z0-9_.]*$`
	// +kubebuilder:validation:items:MaxLength=64
	Parameters []string `json:"parameters,omitempty"`
	// attenuation narrows this tool's capability further than the class's.
	// +optional
	Attenuation *Attenuation `json:"attenuation,omitempty"`
}

// RecallAccess is what a recall-bucket grant allows.
// +kubebuilder:validation:Enum=Read;ReadWrite
type RecallAccess string

// Recall access levels.
const (
	RecallRead      RecallAccess = "Read"
	RecallReadWrite RecallAccess = "ReadWrite"
)

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
	// delegation is set on a grant an agent created with `aicli-tool delegate`:
	// the grant it narrows and who delegated. Such a grant never allows more
	// than its parent and dies with it.
	// +optional
	Delegation *Delegation `json:"delegation,omitempty"`
}

// Delegation records where a delegated grant's authority comes from.
type Delegation struct {
	// parent names the grant whose slice was delegated.
	// +required
	// +kubebuilder:validation:MinLength=1
	Parent string `json:"parent"`
	// by is the agent that delegated.
	// +required
	// +kubebuilder:validation:MinLength=1
	By string `json:"by"`
	// conversation is the delegating agent's conversation.
	// +optional
	Conversation string `json:"conversation,omitempty"`
}

// ToolCall is one recorded tool invocation. It never holds arguments or
// secret values, only what happened.
type ToolCall struct {
	// tool is the tool's name.
	Tool string `json:"tool"`
	// conversation is the calling conversation's name.
	Conversation string `json:"conversation"`
	// at is when the call started.
	At metav1.Time `json:"at"`
	// exitCode is the backend's exit code (-1 when it did not run to an exit).
	ExitCode int32 `json:"exitCode"`
	// durationMillis is how long the call took.
	DurationMillis int64 `json:"durationMillis"`
	// bytesIn counts argument and stdin bytes.
	BytesIn int64 `json:"bytesIn"`
	// bytesOut counts stdout and stderr bytes.
	BytesOut int64 `json:"bytesOut"`
	// refused is the refusal reason when the call was not authorised.
	// +optional
	Refused string `json:"refused,omitempty"`
}

// GrantConversation is the grant's use by one conversation.
type GrantConversation struct {
	// name is the conversation's name.
	Name string `json:"name"`
	// leaseExpiresAt is when its lease, as issued, ends unless renewed; renewals
	// (every third of the lease) happen in memory and are not written.
	// +optional
	LeaseExpiresAt *metav1.Time `json:"leaseExpiresAt,omitempty"`
	// calls counts its calls.
	// +optional
	Calls int64 `json:"calls,omitempty"`
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
	// leaseExpiresAt is when the latest lease, as issued, ends unless renewed
	// (or, with no lease held, when the last one was lost).
	// +optional
	LeaseExpiresAt *metav1.Time `json:"leaseExpiresAt,omitempty"`
	// issuedAt is when capabilities were last issued.
	// +optional
	IssuedAt *metav1.Time `json:"issuedAt,omitempty"`
	// revokedAt is when capabilities were last revoked.
	// +optional
	RevokedAt *metav1.Time `json:"revokedAt,omitempty"`
	// calls counts authorised tool calls.
	// +optional
	Calls int64 `json:"calls,omitempty"`
	// refused counts refused tool calls.
	// +optional
	Refused int64 `json:"refused,omitempty"`
	// lastCall is the most recent call; each call is an event in the grant's history.
	// +optional
	LastCall *ToolCall `json:"lastCall,omitempty"`
	// conversations are the live conversations holding a lease on the grant.
	// +optional
	// +listType=map
	// +listMapKey=name
	Conversations []GrantConversation `json:"conversations,omitempty"`
}

// Grant delegates capabilities (tools, recall buckets, peers, observe/inject)
// to an agent.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=grants,scope=Namespaced,shortName=gr
// +kubebuilder:printcolumn:name="Subject",type=string,JSONPath=`.spec.subject`
// +kubebuilder:printcolumn:name="Tools",type=string,JSONPath=`.spec.tools[*].name`
// +kubebuilder:printcolumn:name="Lease",type=string,JSONPath=`.status.conditions[?(@.type=="LeaseHeld")].status`
// +kubebuilder:printcolumn:name="Calls",type=integer,JSONPath=`.status.calls`,priority=1
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
