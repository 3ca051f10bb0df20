package admission

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/grants"
)

// Grants admits Grant writes that the schema cannot judge alone: unique tool
// names, every tool naming a ToolClass (never a backend of its own), and no
// tool wider than its class or of a class that does not admit the namespace.
// A class that does not exist yet is accepted (the grant is Stalled until a
// cluster admin creates it, as a claim waits for its StorageClass). The
// subject is a bare agent name (the schema's pattern), so a grant can only
// ever name an agent of its own namespace.
type Grants struct {
	Store Lister
}

var grantGK = v1alpha1.GroupVersion.WithKind("Grant").GroupKind()

// Admit implements apiserver.Admitter.
func (g *Grants) Admit(ctx context.Context, _ apiserver.Operation, _, obj *unstructured.Unstructured) error {
	list, err := g.Store.List(ctx, "toolclasses", "", nil)
	if err != nil {
		return err
	}
	classes := map[string]*v1alpha1.ToolClass{}
	for _, item := range list.Items {
		var c v1alpha1.ToolClass
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &c); err != nil {
			return apierrors.NewInternalError(err)
		}
		classes[c.Name] = &c
	}
	return validateAs(obj, grantGK, func(gr *v1alpha1.Grant) field.ErrorList {
		errs := grants.Validate(&gr.Spec)
		if len(errs) > 0 {
			return errs
		}
		for i := range gr.Spec.Tools {
			t := &gr.Spec.Tools[i]
			c := classes[t.ClassName]
			if c == nil {
				continue
			}
			if _, bad := grants.Resolve(gr.Namespace, t, gr.Spec.Attenuation, c); bad != nil {
				errs = append(errs, field.Forbidden(field.NewPath("spec", "tools").Index(i), bad.Message))
			}
		}
		return errs
	})
}

// ToolClasses admits ToolClass writes the schema cannot judge alone: one
// backend, an absolute command, secrets routed where the backend can use them.
type ToolClasses struct{}

// Stateless marks ToolClasses as reading nothing but the object.
func (ToolClasses) Stateless() {}

var toolClassGK = v1alpha1.GroupVersion.WithKind("ToolClass").GroupKind()

// Admit implements apiserver.Admitter.
func (ToolClasses) Admit(_ context.Context, _ apiserver.Operation, _, obj *unstructured.Unstructured) error {
	return validateAs(obj, toolClassGK, func(c *v1alpha1.ToolClass) field.ErrorList { return grants.ValidateClass(&c.Spec) })
}
