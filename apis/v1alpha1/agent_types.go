package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Harness names an AI CLI a guest image can run.
// +kubebuilder:validation:Enum=claude;codex;gemini;opencode;fake
type Harness string

// Supported harnesses.
const (
	HarnessClaude   Harness = "claude"
	HarnessCodex    Harness = "codex"
	HarnessGemini   Harness = "gemini"
	HarnessOpenCode Harness = "opencode"
	HarnessFake     Harness = "fake"
)

// EnvVar is one non-secret environment variable for the agent's CLI.
type EnvVar struct {
	// name of the variable; a POSIX shell identifier.
	// +required
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`
	// value of the variable. Secrets do not belong here (docs/concepts.md#capabilities-and-secrets).
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value,omitempty"`
}

// PeerSet names the peer agents, in the same namespace, a direction of
// messaging is allowed with.
type PeerSet struct {
	// all allows every agent of the namespace (the owner's roster).
	// +optional
	All bool `json:"all,omitempty"`
	// agents lists the allowed agents by name when all is false.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:items:MaxLength=63
	Agents []string `json:"agents,omitempty"`
	// selector allows the agents whose labels match, in addition to agents.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// MailDelivery is how mail reaches an agent's live conversation.
// +kubebuilder:validation:Enum=Inline;NotifyOnly
type MailDelivery string

// Mail delivery modes.
const (
	// MailInline sends each message, prefixed [Mail from agent "name"]: , into the conversation.
	MailInline MailDelivery = "Inline"
	// MailNotifyOnly sends a one-line notice; the agent reads the mail with mail-inbox.
	MailNotifyOnly MailDelivery = "NotifyOnly"
)

// PeerPolicy configures inter-agent messaging, each direction independently (docs/concepts.md#mailbox).
type PeerPolicy struct {
	// sendTo lists who this agent may message.
	// +optional
	SendTo *PeerSet `json:"sendTo,omitempty"`
	// receiveFrom lists who may message this agent.
	// +optional
	ReceiveFrom *PeerSet `json:"receiveFrom,omitempty"`
	// delivery is how mail reaches the agent's live conversation (and the
	// backlog its next one): Inline (default) or NotifyOnly.
	// +optional
	// +kubebuilder:default=Inline
	Delivery MailDelivery `json:"delivery,omitempty"`
}

// EgressPolicy is the agent's default-deny egress allow-list (docs/concepts.md#egress).
type EgressPolicy struct {
	// allow lists the domains (exact, or "*.example.com" for subdomains) the
	// agent's container may reach through the supervisor's egress proxy, in
	// addition to its model provider endpoint.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[0-9]{1,5})?$`
	// +kubebuilder:validation:items:MaxLength=253
	Allow []string `json:"allow,omitempty"`
}

// CredentialSource says where the model credential comes from.
// +kubebuilder:validation:Enum=None;Secret;OAuth
type CredentialSource string

// Credential sources.
const (
	CredentialNone   CredentialSource = "None"
	CredentialSecret CredentialSource = "Secret"
	CredentialOAuth  CredentialSource = "OAuth"
)

// ProviderSpec is how the agent's CLI reaches its model provider (docs/concepts.md#capabilities-and-secrets).
type ProviderSpec struct {
	// endpoint is the provider base URL the CLI talks to; empty means the CLI's default.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	Endpoint string `json:"endpoint,omitempty"`
	// credential says where the model credential comes from: None, Secret (a
	// supervisor-held secret injected as the CLI expects) or OAuth (the CLI's
	// own login, performed once through the PTY and kept on the durable home).
	// +optional
	// +kubebuilder:default=None
	Credential CredentialSource `json:"credential,omitempty"`
	// secretName names the supervisor-held secret when credential is Secret.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName,omitempty"`
}

// BudgetSpec is the agent's spend-rate allocation (docs/concepts.md#capabilities-and-secrets).
type BudgetSpec struct {
	// usdPerHour is the accrual rate of the agent's spend bucket, as a decimal string.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]{1,4})?$`
	USDPerHour string `json:"usdPerHour,omitempty"`
	// burstUSD is the bucket's capacity, as a decimal string; empty means one
	// hour of accrual (usdPerHour).
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]{1,6})?$`
	BurstUSD string `json:"burstUSD,omitempty"`
	// maxWaitSeconds is how long delivery of a message may be held waiting for
	// the bucket to accrue enough; when accrual cannot cover the next message
	// within it, the conversation is paused with BudgetExhausted.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +kubebuilder:default=600
	MaxWaitSeconds *int32 `json:"maxWaitSeconds,omitempty"`
}

// BudgetStatus is the agent's spend bucket as last settled (docs/budget.md).
type BudgetStatus struct {
	// availableUSD is the bucket's level at asOf, as a decimal string.
	// +optional
	AvailableUSD string `json:"availableUSD,omitempty"`
	// asOf is when the level was last settled.
	// +optional
	AsOf *metav1.Time `json:"asOf,omitempty"`
	// spentUSD is everything charged to the bucket (measured conversation
	// spend and tool-call costs), as a decimal string.
	// +optional
	SpentUSD string `json:"spentUSD,omitempty"`
	// toppedUpUSD is everything added by top-ups, as a decimal string.
	// +optional
	ToppedUpUSD string `json:"toppedUpUSD,omitempty"`
}

// ResourceLimits bounds a conversation's container.
type ResourceLimits struct {
	// memoryMiB caps the container's memory.
	// +optional
	// +kubebuilder:validation:Minimum=64
	// +kubebuilder:validation:Maximum=65536
	// +kubebuilder:default=2048
	MemoryMiB int32 `json:"memoryMiB,omitempty"`
	// pids caps the number of processes in the container.
	// +optional
	// +kubebuilder:validation:Minimum=16
	// +kubebuilder:validation:Maximum=32768
	// +kubebuilder:default=512
	Pids int32 `json:"pids,omitempty"`
}

// AgentSpec is the desired definition of an agent: which CLI it runs, how, and
// what it may reach.
type AgentSpec struct {
	// harness selects the AI CLI and with it the per-harness guest image.
	// +required
	Harness Harness `json:"harness"`
	// image overrides the guest image built from the shipped definition.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`
	// model is the model the CLI uses; empty means the CLI's default.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Model string `json:"model,omitempty"`
	// persona is the agent's system prompt.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Persona string `json:"persona,omitempty"`
	// env is non-secret environment for the CLI.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	Env []EnvVar `json:"env,omitempty"`
	// provider is how the CLI reaches its model provider.
	// +optional
	// +kubebuilder:default={}
	Provider ProviderSpec `json:"provider,omitempty"`
	// peers configures who the agent may message and be messaged by.
	// +optional
	Peers *PeerPolicy `json:"peers,omitempty"`
	// egress is the agent's egress allow-list; everything else is denied.
	// +optional
	Egress *EgressPolicy `json:"egress,omitempty"`
	// budget is the agent's spend-rate allocation.
	// +optional
	Budget *BudgetSpec `json:"budget,omitempty"`
	// resources bounds each conversation container of the agent.
	// +optional
	// +kubebuilder:default={}
	Resources ResourceLimits `json:"resources,omitempty"`
}

// SpendSummary is the agent's accounted spend, from its CLI's session files.
type SpendSummary struct {
	// totalUSD is the cost of all priced usage, as a decimal string.
	// +optional
	TotalUSD string `json:"totalUSD,omitempty"`
	// unpriced is true when some usage could not be priced.
	// +optional
	Unpriced bool `json:"unpriced,omitempty"`
}

// AgentStatus is what the supervisor observed about the agent.
type AgentStatus struct {
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions hold Ready and one condition per dependency.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// homeSupervisor is the id of the supervisor that homes the agent.
	// +optional
	HomeSupervisor string `json:"homeSupervisor,omitempty"`
	// homePath is the durable home directory on the supervisor host.
	// +optional
	HomePath string `json:"homePath,omitempty"`
	// workspacePath is the durable workspace directory on the supervisor host.
	// +optional
	WorkspacePath string `json:"workspacePath,omitempty"`
	// liveConversation names the agent's Active conversation, if any.
	// +optional
	LiveConversation string `json:"liveConversation,omitempty"`
	// inboxUnread counts the agent's unread mail (docs/mail.md); 0 is written, not omitted.
	// +optional
	InboxUnread int32 `json:"inboxUnread"`
	// spend summarises the agent's accounted spend.
	// +optional
	Spend *SpendSummary `json:"spend,omitempty"`
	// budget is the agent's spend bucket, when spec.budget is set.
	// +optional
	Budget *BudgetStatus `json:"budget,omitempty"`
}

// Agent is a persistent AI agent homed on this supervisor: its CLI choice,
// persona, environment and reach. Conversations are launched from it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=agents,scope=Namespaced,shortName=ag
// +kubebuilder:printcolumn:name="Harness",type=string,JSONPath=`.spec.harness`
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Live",type=string,JSONPath=`.status.liveConversation`
// +kubebuilder:printcolumn:name="Unread",type=integer,JSONPath=`.status.inboxUnread`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Agent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the agent's desired definition.
	// +required
	Spec AgentSpec `json:"spec"`
	// status is what the supervisor observed.
	// +optional
	Status AgentStatus `json:"status,omitempty"`
}

// AgentList is a list of Agents.
//
// +kubebuilder:object:root=true
type AgentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Agent `json:"items"`
}
