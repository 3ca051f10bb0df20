package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of every resource in this package.
const Group = "aicli.dev"

// Version is the API version of every resource in this package.
const Version = "v1alpha1"

// GroupVersion is group version used to register these objects.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// AddToScheme registers the kinds of this package (and their List types).
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Agent{}, &AgentList{},
		&Conversation{}, &ConversationList{},
		&Grant{}, &GrantList{},
		&MonitorAttachment{}, &MonitorAttachmentList{},
		&ToolClass{}, &ToolClassList{},
		&NamespacePolicy{}, &NamespacePolicyList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
