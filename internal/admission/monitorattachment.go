package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/monitor/match"
)

// MonitorAttachments admits MonitorAttachment writes whose trigger the schema
// cannot judge alone (match.Validate): a whitespace-only or duplicate keyword,
// an empty list or keyword when the schema's defaults are bypassed. Each error
// names its field under spec.trigger. A namespace-bound writer may only name a
// remote supervisor its NamespacePolicies allow.
type MonitorAttachments struct {
	Store Lister
}

// Stateless marks attachment writes as not serialised (see Agents.Stateless).
func (*MonitorAttachments) Stateless() {}

var monitorAttachmentGK = v1alpha1.GroupVersion.WithKind("MonitorAttachment").GroupKind()

// Admit implements apiserver.Admitter.
func (m *MonitorAttachments) Admit(ctx context.Context, _ apiserver.Operation, old, obj *unstructured.Unstructured) error {
	allowed, err := bounded(ctx, m.Store, obj.GetNamespace())
	if err != nil {
		return err
	}
	before, err := decodeOld[v1alpha1.MonitorAttachment](old)
	if err != nil {
		return err
	}
	return validateAs(obj, monitorAttachmentGK, func(a *v1alpha1.MonitorAttachment) field.ErrorList {
		return append(match.Validate(a.Spec.Trigger), monitorPolicy(allowed, a, before)...)
	})
}
