package admission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
)

// Lister lists objects of a resource in a namespace.
type Lister interface {
	List(ctx context.Context, resource, namespace string, sel labels.Selector) (*unstructured.UnstructuredList, error)
}

// Conversations admits Conversation writes: agentRef is immutable and at most
// one conversation per agent may desire Active.
type Conversations struct {
	Store Lister
}

var conversationGK = v1alpha1.GroupVersion.WithKind("Conversation").GroupKind()

// Admit implements apiserver.Admitter.
func (c *Conversations) Admit(ctx context.Context, op apiserver.Operation, old, obj *unstructured.Unstructured) error {
	agent, _, _ := unstructured.NestedString(obj.Object, "spec", "agentRef")
	if old != nil {
		oldAgent, _, _ := unstructured.NestedString(old.Object, "spec", "agentRef")
		if oldAgent != agent {
			return apierrors.NewInvalid(conversationGK, obj.GetName(), field.ErrorList{
				field.Invalid(field.NewPath("spec", "agentRef"), agent, "field is immutable"),
			})
		}
	}
	desired, _, _ := unstructured.NestedString(obj.Object, "spec", "desiredState")
	if old != nil {
		oldDesired, _, _ := unstructured.NestedString(old.Object, "spec", "desiredState")
		if oldDesired == string(v1alpha1.ConversationArchived) && desired != oldDesired {
			return apierrors.NewInvalid(conversationGK, obj.GetName(), field.ErrorList{
				field.Invalid(field.NewPath("spec", "desiredState"), desired,
					"an Archived conversation stays archived (its transcript remains readable); start a new conversation instead"),
			})
		}
	}
	if desired != string(v1alpha1.ConversationActive) {
		return nil
	}
	live, err := LiveConversation(ctx, c.Store, obj.GetNamespace(), agent, obj.GetName())
	if err != nil {
		return err
	}
	if live != "" {
		return apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("conversations").GroupResource(), obj.GetName(),
			fmt.Errorf("agent %q already has a live conversation %q (spec.desiredState: Active); continue that one or pause it first", agent, live))
	}
	return nil
}

// LiveConversation returns the name of the agent's conversation, other than
// except, whose desired state is Active and that is not being deleted.
func LiveConversation(ctx context.Context, l Lister, namespace, agent, except string) (string, error) {
	list, err := l.List(ctx, "conversations", namespace, labels.Everything())
	if err != nil {
		return "", err
	}
	for _, item := range list.Items {
		if item.GetName() == except || item.GetDeletionTimestamp() != nil {
			continue
		}
		a, _, _ := unstructured.NestedString(item.Object, "spec", "agentRef")
		d, _, _ := unstructured.NestedString(item.Object, "spec", "desiredState")
		if a == agent && d == string(v1alpha1.ConversationActive) {
			return item.GetName(), nil
		}
	}
	return "", nil
}
