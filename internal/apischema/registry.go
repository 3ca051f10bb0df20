package apischema

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/config/crd"
)

// Resource describes one kind of the aicli.dev API.
type Resource struct {
	Kind       string
	ListKind   string
	Plural     string
	Singular   string
	ShortNames []string
	Namespaced bool
	// PrintColumns are the CRD's additionalPrinterColumns, in order.
	PrintColumns []apiextv1.CustomResourceColumnDefinition
	// Schema is the version's OpenAPI v3 schema, used for validation and defaulting.
	Schema *spec.Schema
	// HasStatus is true when the kind has a status subresource.
	HasStatus bool
}

// GroupVersionKind returns the resource's GVK.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return v1alpha1.GroupVersion.WithKind(r.Kind)
}

// GroupResource returns the resource's group and plural, as API errors name it.
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: v1alpha1.Group, Resource: r.Plural}
}

// Registry indexes the resources by plural, singular, kind and short name.
type Registry struct {
	byName    map[string]*Resource
	resources []*Resource
	scheme    *runtime.Scheme
}

var (
	defaultOnce sync.Once
	defaultReg  *Registry
	defaultErr  error
)

// Default returns the registry built from the embedded CRDs. It panics if the
// embedded CRDs are unreadable, which is a build defect.
func Default() *Registry {
	defaultOnce.Do(func() { defaultReg, defaultErr = Load(crd.FS) })
	if defaultErr != nil {
		panic(fmt.Sprintf("apischema: embedded CRDs: %v", defaultErr))
	}
	return defaultReg
}

// Load builds a registry from CRD manifests under bases/ in fsys.
func Load(fsys fs.FS) (*Registry, error) {
	files, err := fs.Glob(fsys, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	reg := &Registry{byName: map[string]*Resource{}, scheme: scheme}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		var def apiextv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &def); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		res, err := resourceFromCRD(&def)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		reg.resources = append(reg.resources, res)
		for _, n := range append([]string{res.Plural, res.Singular, strings.ToLower(res.Kind)}, res.ShortNames...) {
			reg.byName[n] = res
		}
	}
	sort.Slice(reg.resources, func(i, j int) bool { return reg.resources[i].Plural < reg.resources[j].Plural })
	return reg, nil
}

func resourceFromCRD(def *apiextv1.CustomResourceDefinition) (*Resource, error) {
	var version *apiextv1.CustomResourceDefinitionVersion
	for i := range def.Spec.Versions {
		if def.Spec.Versions[i].Name == v1alpha1.Version {
			version = &def.Spec.Versions[i]
		}
	}
	if version == nil || version.Schema == nil || version.Schema.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("no %s schema", v1alpha1.Version)
	}
	raw, err := yaml.Marshal(version.Schema.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	var s spec.Schema
	if err := yaml.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("openAPIV3Schema: %w", err)
	}
	return &Resource{
		Kind:         def.Spec.Names.Kind,
		ListKind:     def.Spec.Names.ListKind,
		Plural:       def.Spec.Names.Plural,
		Singular:     def.Spec.Names.Singular,
		ShortNames:   def.Spec.Names.ShortNames,
		Namespaced:   def.Spec.Scope == apiextv1.NamespaceScoped,
		PrintColumns: version.AdditionalPrinterColumns,
		Schema:       &s,
		HasStatus:    version.Subresources != nil && version.Subresources.Status != nil,
	}, nil
}

// Lookup finds a resource by plural, singular, lower-case kind or short name
// (case-insensitive), the way kubectl resolves `get agents`, `get agent`, `get ag`.
func (r *Registry) Lookup(name string) (*Resource, bool) {
	res, ok := r.byName[strings.ToLower(name)]
	return res, ok
}

// ForKind finds a resource by its Kind.
func (r *Registry) ForKind(kind string) (*Resource, bool) {
	for _, res := range r.resources {
		if res.Kind == kind {
			return res, true
		}
	}
	return nil, false
}

// Resources lists every resource, sorted by plural.
func (r *Registry) Resources() []*Resource { return r.resources }

// Scheme returns a scheme holding the aicli.dev types.
func (r *Registry) Scheme() *runtime.Scheme { return r.scheme }
