package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ToolClassSpec is one host-side tool backend a cluster admin approved.
type ToolClassSpec struct {
	// backend executes the tool on the supervisor host; exactly one of exec
	// or http is set.
	// +required
	Backend ToolBackend `json:"backend"`
	// secretRefs are handed to the backend, never to the container.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	SecretRefs []SecretRef `json:"secretRefs,omitempty"`
	// usage is the one-line usage the CLI is told (instruction file, --help),
	// unless the grant gives its own.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Usage string `json:"usage,omitempty"`
	// timeoutSeconds bounds one call; the backend is killed when it passes. A
	// grant may only shorten it.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:default=30
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
	// costUSD is charged to the calling agent's budget per call, as a decimal string.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]{1,6})?$`
	CostUSD string `json:"costUSD,omitempty"`
	// parameters are the only `--NAME=VALUE` options a caller may pass; other
	// arguments must be operands (docs/tools.md#parameters-and-pins). Empty means the
	// caller's arguments are not restricted (unless something is pinned).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9][-A-Za-z0-9_.]*$`
	// +kubebuilder:validation:items:MaxLength=64
	Parameters []string `json:"parameters,omitempty"`
	// attenuation narrows every grant of the class (pins, call cap, expiry).
	// +optional
	Attenuation *Attenuation `json:"attenuation,omitempty"`
	// namespaces lists the namespaces whose Grants may use the class; empty
	// means every namespace.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:items:MaxLength=63
	Namespaces []string `json:"namespaces,omitempty"`
}

// ToolClass is a host-side tool backend (a command or an HTTP endpoint, its
// secrets and limits) that cluster admins define and namespaced Grants
// reference by name and may only narrow, as a StorageClass is to a claim
// (docs/tools.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=toolclasses,scope=Cluster,shortName=tc
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backend.exec.command`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.backend.http.url`
// +kubebuilder:printcolumn:name="Namespaces",type=string,JSONPath=`.spec.namespaces`
// +kubebuilder:printcolumn:name="Timeout",type=integer,JSONPath=`.spec.timeoutSeconds`,priority=1
// +kubebuilder:printcolumn:name="Cost",type=string,JSONPath=`.spec.costUSD`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ToolClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the approved backend.
	// +required
	Spec ToolClassSpec `json:"spec"`
}

// ToolClassList is a list of ToolClasses.
//
// +kubebuilder:object:root=true
type ToolClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ToolClass `json:"items"`
}
