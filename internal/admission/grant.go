package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/grants"
)

// Grants admits Grant writes that the schema cannot judge alone: unique tool
// names, one backend per tool, secrets routed where the backend can use them.
// The subject is a bare agent name (the schema's pattern), so a grant can only
// ever name an agent of its own namespace.
type Grants struct{}

var grantGK = v1alpha1.GroupVersion.WithKind("Grant").GroupKind()

// Admit implements apiserver.Admitter.
func (Grants) Admit(_ context.Context, _ apiserver.Operation, _, obj *unstructured.Unstructured) error {
	return validateAs(obj, grantGK, func(g *v1alpha1.Grant) field.ErrorList { return grants.Validate(&g.Spec) })
}
