package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NamespacePolicySpec is what agents of some namespaces may reach, beyond
// the supervisor's built-in defaults.
type NamespacePolicySpec struct {
	// namespaces lists the namespaces the policy applies to; empty means every
	// namespace.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:items:MaxLength=63
	Namespaces []string `json:"namespaces,omitempty"`
	// images lists the guest images an Agent's spec.image may name: an exact
	// reference, or a prefix ending in "*" ("team-a/*").
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	Images []string `json:"images,omitempty"`
	// providerEndpoints lists the model provider URLs an Agent's
	// spec.provider.endpoint may name: an endpoint is allowed when its scheme,
	// host and port equal an entry's and its path starts with the entry's path.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:Pattern=`^https?://`
	// +kubebuilder:validation:items:MaxLength=2048
	ProviderEndpoints []string `json:"providerEndpoints,omitempty"`
	// egressDomains lists the domains an Agent's spec.egress.allow may name:
	// exact ("pypi.org", "host:8443"), or "*.example.com", which covers every
	// subdomain (and an agent's own "*.a.example.com").
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[0-9]{1,5})?$`
	// +kubebuilder:validation:items:MaxLength=253
	EgressDomains []string `json:"egressDomains,omitempty"`
	// remoteSupervisors lists the supervisor API URLs a MonitorAttachment's
	// spec.target.supervisor.address may name, matched as providerEndpoints are.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:Pattern=`^https://`
	// +kubebuilder:validation:items:MaxLength=2048
	RemoteSupervisors []string `json:"remoteSupervisors,omitempty"`
}

// NamespacePolicy is a cluster admin's allowance for tenants: the guest
// images, model provider endpoints, egress domains and remote supervisors
// that objects in its namespaces may name. Writes by namespace-bound
// principals are refused beyond the union of the policies that apply to
// their namespace (docs/security.md#namespace-policy); cluster admins are
// not bound by it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=namespacepolicies,scope=Cluster,shortName=nsp
// +kubebuilder:printcolumn:name="Namespaces",type=string,JSONPath=`.spec.namespaces`
// +kubebuilder:printcolumn:name="Images",type=string,JSONPath=`.spec.images`,priority=1
// +kubebuilder:printcolumn:name="Endpoints",type=string,JSONPath=`.spec.providerEndpoints`,priority=1
// +kubebuilder:printcolumn:name="Egress",type=string,JSONPath=`.spec.egressDomains`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NamespacePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the allowance.
	// +required
	Spec NamespacePolicySpec `json:"spec"`
}

// NamespacePolicyList is a list of NamespacePolicies.
//
// +kubebuilder:object:root=true
type NamespacePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NamespacePolicy `json:"items"`
}
