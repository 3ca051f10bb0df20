package admission

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
)

// Agents admits Agent writes the schema cannot judge alone: the label
// selectors of spec.peers must parse (an invalid one would silently allow
// nobody).
type Agents struct{}

// Stateless marks Agents as reading nothing but the object: agent writes are not serialised.
func (Agents) Stateless() {}

var agentGK = v1alpha1.GroupVersion.WithKind("Agent").GroupKind()

// Admit implements apiserver.Admitter.
func (Agents) Admit(_ context.Context, _ apiserver.Operation, _, obj *unstructured.Unstructured) error {
	return validateAs(obj, agentGK, func(a *v1alpha1.Agent) field.ErrorList { return validatePeers(a.Spec.Peers) })
}

func validatePeers(p *v1alpha1.PeerPolicy) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	peers := field.NewPath("spec", "peers")
	for _, set := range []struct {
		name string
		set  *v1alpha1.PeerSet
	}{{"sendTo", p.SendTo}, {"receiveFrom", p.ReceiveFrom}} {
		if set.set == nil || set.set.Selector == nil {
			continue
		}
		if _, err := metav1.LabelSelectorAsSelector(set.set.Selector); err != nil {
			errs = append(errs, field.Invalid(peers.Child(set.name, "selector"), set.set.Selector, err.Error()))
		}
	}
	return errs
}
