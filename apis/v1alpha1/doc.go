// Package v1alpha1 holds the aicli.dev/v1alpha1 resources: Agent, Conversation,
// Grant and MonitorAttachment. It imports only the standard library and
// apimachinery, so consoles and monitors can depend on it cheaply.
//
// +kubebuilder:object:generate=true
// +groupName=aicli.dev
package v1alpha1
