package aictl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
)

// manifest is one object read from a file, with where it came from.
type manifest struct {
	source string // file name, or STDIN
	index  int    // 1-based position among the file's non-empty documents
	obj    *unstructured.Unstructured
	res    *apischema.Resource
}

// where names the manifest's origin for messages.
func (m manifest) where() string {
	return fmt.Sprintf("%q (document %d)", m.source, m.index)
}

// readManifests reads every object from paths: files, directories (each
// .yaml, .yml and .json file in it, sorted) or "-" for stdin. Objects without
// a namespace get ns; objects are resolved against reg.
func readManifests(paths []string, stdin io.Reader, reg *apischema.Registry) ([]manifest, error) {
	if len(paths) == 0 {
		return nil, errors.New("must specify -f FILENAME (a file, a directory or - for stdin)")
	}
	var out []manifest
	for _, p := range paths {
		if p == "-" {
			ms, err := decodeManifests(stdin, "STDIN", reg)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
			continue
		}
		files, err := expandPath(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", f, err)
			}
			ms, err := decodeManifests(fh, f, reg)
			_ = fh.Close()
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no objects found in the given files")
	}
	return out, nil
}

func expandPath(p string) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("the path %q does not exist: %w", p, err)
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("reading directory %s: %w", p, err)
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("directory %s holds no .yaml, .yml or .json files", p)
	}
	return files, nil
}

// decodeManifests splits a multi-document YAML or JSON stream into objects;
// a kind: List document contributes its items.
func decodeManifests(r io.Reader, source string, reg *apischema.Registry) ([]manifest, error) {
	dec := yaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []manifest
	for index := 1; ; {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("error parsing %q (document %d): %w", source, index, err)
		}
		if len(doc) == 0 {
			continue
		}
		objs := []*unstructured.Unstructured{{Object: doc}}
		if doc["kind"] == "List" {
			items, _ := doc["items"].([]any)
			objs = objs[:0]
			for _, it := range items {
				if m, ok := it.(map[string]any); ok {
					objs = append(objs, &unstructured.Unstructured{Object: m})
				}
			}
		}
		for _, obj := range objs {
			m := manifest{source: source, index: index, obj: obj}
			res, err := resolveKind(obj, reg)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.where(), err)
			}
			m.res = res
			out = append(out, m)
		}
		index++
	}
}

func resolveKind(obj *unstructured.Unstructured, reg *apischema.Registry) (*apischema.Resource, error) {
	if obj.GetKind() == "" {
		return nil, errors.New("object 'kind' is missing")
	}
	if obj.GetAPIVersion() == "" {
		return nil, errors.New("object 'apiVersion' is missing")
	}
	res, ok := reg.ForKind(obj.GetKind())
	if !ok || obj.GetAPIVersion() != v1alpha1.GroupVersion.String() {
		return nil, fmt.Errorf("no matches for kind %q in version %q", obj.GetKind(), obj.GetAPIVersion())
	}
	if obj.GetName() == "" {
		if v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "name"); found {
			return nil, fmt.Errorf("metadata.name must be a string, not %T %v (quote it in YAML)", v, v)
		}
		return nil, errors.New("object 'metadata.name' is missing")
	}
	return res, nil
}

// setNamespace gives obj the namespace ns when it has none; an explicit -n
// that contradicts the object's namespace is an error, as in kubectl. A
// cluster-scoped object has no namespace, whatever -n says.
func (g *globalOptions) setNamespace(m manifest) error {
	ns := m.obj.GetNamespace()
	switch {
	case !m.res.Namespaced && ns != "":
		return fmt.Errorf("%s: %s is cluster-scoped: remove metadata.namespace %q", m.where(), m.res.Kind, ns)
	case !m.res.Namespaced:
	case ns == "":
		m.obj.SetNamespace(g.ns())
	case g.nsSet && ns != g.ns():
		return fmt.Errorf("%s: the namespace from the provided object %q does not match the namespace %q; pass --namespace=%s",
			m.where(), ns, g.ns(), ns)
	}
	return nil
}

// target is one named object on the command line.
type target struct {
	res  *apischema.Resource
	name string
}

// parseTargets reads "KIND [NAME...]" or "KIND/NAME..." arguments. It
// returns the kind, and the named objects (none for "KIND" alone).
func parseTargets(args []string, reg *apischema.Registry) (*apischema.Resource, []target, error) {
	if len(args) == 0 {
		return nil, nil, errors.New("you must specify the type of resource (agents, conversations, grants, monitorattachments)")
	}
	if strings.Contains(args[0], "/") {
		var out []target
		for _, a := range args {
			kind, name, ok := strings.Cut(a, "/")
			if !ok || name == "" {
				return nil, nil, fmt.Errorf("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (got %q)", a)
			}
			res, err := lookup(kind, reg)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, target{res: res, name: name})
		}
		return out[0].res, out, nil
	}
	res, err := lookup(args[0], reg)
	if err != nil {
		return nil, nil, err
	}
	var out []target
	for _, name := range args[1:] {
		out = append(out, target{res: res, name: name})
	}
	return res, out, nil
}

func lookup(kind string, reg *apischema.Registry) (*apischema.Resource, error) {
	k := strings.TrimSuffix(strings.ToLower(kind), "."+v1alpha1.Group)
	if res, ok := reg.Lookup(k); ok {
		return res, nil
	}
	return nil, fmt.Errorf("the server doesn't have a resource type %q", kind)
}

// ref is kubectl's "kind.group/name" for an object.
func ref(res *apischema.Resource, name string) string {
	return strings.ToLower(res.Kind) + "." + v1alpha1.Group + "/" + name
}

// quotedRef is kubectl's `kind.group "name"` form.
func quotedRef(res *apischema.Resource, name string) string {
	return fmt.Sprintf("%s.%s %q", strings.ToLower(res.Kind), v1alpha1.Group, name)
}
