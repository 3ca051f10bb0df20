package admission

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateAs decodes obj into a T and refuses it as Invalid (kind gk) with
// the errors validate finds; a body that does not decode is a BadRequest.
func validateAs[T any](obj *unstructured.Unstructured, gk schema.GroupKind, validate func(*T) field.ErrorList) error {
	var typed T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &typed); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if errs := validate(&typed); len(errs) > 0 {
		return apierrors.NewInvalid(gk, obj.GetName(), errs)
	}
	return nil
}
