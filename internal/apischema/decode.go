package apischema

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"math/big"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	openapierrors "k8s.io/kube-openapi/pkg/validation/errors"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
	sigsjson "sigs.k8s.io/json"

	"aicli.dev/aicli/apis/v1alpha1"
)

// MaxObjectBytes is the largest encoded object the API accepts.
const MaxObjectBytes = 1 << 20

// Decode turns a JSON request body into a validated, defaulted object of res.
// Errors are Kubernetes StatusErrors (400 BadRequest, 413, or 422 Invalid)
// whose messages name the offending field. namespace, when non-empty, is the
// namespace of the request path: the object must match it or leave it empty.
func (r *Registry) Decode(res *Resource, namespace string, data []byte) (*unstructured.Unstructured, error) {
	if len(data) > MaxObjectBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(
			fmt.Sprintf("object is %d bytes, the limit is %d", len(data), MaxObjectBytes))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, apierrors.NewBadRequest("empty request body: expected a JSON object")
	}
	if err := r.strictDecodeCheck(res, data); err != nil {
		return nil, err
	}
	var content map[string]any
	if err := utiljson.Unmarshal(data, &content); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s cannot be decoded: %v", res.Kind, err))
	}
	obj := &unstructured.Unstructured{Object: content}
	if err := checkTypeMeta(res, obj); err != nil {
		return nil, err
	}
	if !res.Namespaced && obj.GetNamespace() != "" {
		return nil, invalid(res, obj.GetName(), field.Invalid(field.NewPath("metadata", "namespace"),
			obj.GetNamespace(), fmt.Sprintf("%s is cluster-scoped: it has no namespace", res.Kind)))
	}
	if res.Namespaced && obj.GetNamespace() == "" {
		obj.SetNamespace(namespace)
	}
	if res.Namespaced && namespace != "" && obj.GetNamespace() != namespace {
		return nil, invalid(res, obj.GetName(), field.Invalid(field.NewPath("metadata", "namespace"),
			obj.GetNamespace(), fmt.Sprintf("does not match the namespace of the request (%q)", namespace)))
	}
	if obj.GetName() == "" && obj.GetGenerateName() != "" {
		obj.SetName(generateName(obj.GetGenerateName()))
	}
	if errs := validateMeta(res, obj); len(errs) > 0 {
		return nil, invalid(res, obj.GetName(), errs...)
	}
	ApplyDefaults(res.Schema, obj.Object)
	if errs := validateSchema(res, obj.Object); len(errs) > 0 {
		return nil, invalid(res, obj.GetName(), errs...)
	}
	return obj, nil
}

// strictDecodeCheck decodes into the typed Go struct, rejecting unknown and
// duplicate fields and wrong JSON types with the field path in the message.
func (r *Registry) strictDecodeCheck(res *Resource, data []byte) error {
	typed, err := r.scheme.New(res.GroupVersionKind())
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	strictErrs, err := sigsjson.UnmarshalStrict(data, typed)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("%s cannot be decoded: %s", res.Kind, cleanJSONError(err)))
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, 0, len(strictErrs))
		for _, e := range strictErrs {
			msgs = append(msgs, e.Error())
		}
		return apierrors.NewBadRequest(fmt.Sprintf("%s: strict decoding error: %s", res.Kind, strings.Join(msgs, ", ")))
	}
	return nil
}

func cleanJSONError(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

func checkTypeMeta(res *Resource, obj *unstructured.Unstructured) error {
	var errs field.ErrorList
	if av := obj.GetAPIVersion(); av != v1alpha1.GroupVersion.String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), av,
			fmt.Sprintf("must be %q", v1alpha1.GroupVersion.String())))
	}
	if k := obj.GetKind(); k != res.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), k, fmt.Sprintf("must be %q for %s", res.Kind, res.Plural)))
	}
	if len(errs) > 0 {
		return invalid(res, obj.GetName(), errs...)
	}
	return nil
}

func validateMeta(res *Resource, obj *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	if obj.GetName() == "" {
		errs = append(errs, field.Required(meta.Child("name"), "a name is required"))
	} else {
		for _, msg := range validation.IsDNS1123Label(obj.GetName()) {
			errs = append(errs, field.Invalid(meta.Child("name"), obj.GetName(), msg))
		}
	}
	switch {
	case !res.Namespaced:
	case obj.GetNamespace() == "":
		errs = append(errs, field.Required(meta.Child("namespace"), "a namespace is required"))
	default:
		for _, msg := range validation.IsDNS1123Label(obj.GetNamespace()) {
			errs = append(errs, field.Invalid(meta.Child("namespace"), obj.GetNamespace(), msg))
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(obj.GetLabels(), meta.Child("labels"))...)
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(obj.GetAnnotations(), meta.Child("annotations"))...)
	for i, f := range obj.GetFinalizers() {
		if msgs := validation.IsQualifiedName(f); len(msgs) > 0 {
			errs = append(errs, field.Invalid(meta.Child("finalizers").Index(i), f, strings.Join(msgs, "; ")))
		}
	}
	return errs
}

func validateSchema(res *Resource, content map[string]any) field.ErrorList {
	result := validate.NewSchemaValidator(res.Schema, nil, "", strfmt.Default).Validate(content)
	if result == nil || result.IsValid() {
		return nil
	}
	var errs field.ErrorList
	for _, e := range result.Errors {
		var v *openapierrors.Validation
		if ve, ok := e.(*openapierrors.Validation); ok {
			v = ve
		}
		if v == nil {
			errs = append(errs, field.Invalid(field.NewPath("<root>"), nil, e.Error()))
			continue
		}
		path := v.Name
		if path == "" || path == "." {
			path = "<root>"
		}
		msg := strings.TrimSpace(strings.TrimPrefix(v.Error(), v.Name+" in body"))
		errs = append(errs, &field.Error{Type: field.ErrorTypeInvalid, Field: path, BadValue: v.Value, Detail: msg})
	}
	return errs
}

func invalid(res *Resource, name string, errs ...*field.Error) error {
	return apierrors.NewInvalid(res.GroupVersionKind().GroupKind(), name, errs)
}

const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func generateName(prefix string) string {
	const n = 5
	if len(prefix) > 63-n {
		prefix = prefix[:63-n]
	}
	var b strings.Builder
	b.WriteString(prefix)
	for range n {
		i, _ := rand.Int(rand.Reader, big.NewInt(int64(len(nameAlphabet))))
		b.WriteByte(nameAlphabet[i.Int64()])
	}
	return b.String()
}
