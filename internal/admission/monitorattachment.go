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
// names its field under spec.trigger.
type MonitorAttachments struct{}

// Stateless marks MonitorAttachments as reading nothing but the object.
func (MonitorAttachments) Stateless() {}

var monitorAttachmentGK = v1alpha1.GroupVersion.WithKind("MonitorAttachment").GroupKind()

// Admit implements apiserver.Admitter.
func (MonitorAttachments) Admit(_ context.Context, _ apiserver.Operation, _, obj *unstructured.Unstructured) error {
	return validateAs(obj, monitorAttachmentGK, func(a *v1alpha1.MonitorAttachment) field.ErrorList {
		return match.Validate(a.Spec.Trigger)
	})
}
