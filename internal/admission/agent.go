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
// nobody), and a namespace-bound writer may only set the image, provider
// endpoint and egress domains its NamespacePolicies allow.
type Agents struct {
	Store Lister
}

// Stateless marks agent writes as not serialised: the policies it reads are
// not changed by agent writes, so no two agent writes can race on them.
func (*Agents) Stateless() {}

var agentGK = v1alpha1.GroupVersion.WithKind("Agent").GroupKind()

// Admit implements apiserver.Admitter.
func (a *Agents) Admit(ctx context.Context, _ apiserver.Operation, old, obj *unstructured.Unstructured) error {
	allowed, err := bounded(ctx, a.Store, obj.GetNamespace())
	if err != nil {
		return err
	}
	before, err := decodeOld[v1alpha1.Agent](old)
	if err != nil {
		return err
	}
	return validateAs(obj, agentGK, func(ag *v1alpha1.Agent) field.ErrorList {
		return append(validatePeers(ag.Spec.Peers), agentPolicy(allowed, ag, before)...)
	})
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
