package storetest

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/store"
)

// Open opens a store in a fresh t.TempDir() and closes it when the test ends.
func Open(t testing.TB, opts store.Options) *store.Store {
	t.Helper()
	return OpenDir(t, t.TempDir(), opts)
}

// OpenDir opens the store in dir and closes it when the test ends.
func OpenDir(t testing.TB, dir string, opts store.Options) *store.Store {
	t.Helper()
	s, err := store.Open(dir, opts)
	if err != nil {
		t.Fatalf("storetest: open store: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("storetest: close store: %v", err)
		}
	})
	return s
}

// Object builds an object of group aicli.dev/v1alpha1 with the given kind,
// address and spec (spec may be nil).
func Object(kind, namespace, name string, spec map[string]interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": store.Group + "/v1alpha1",
		"kind":       kind,
		"metadata":   map[string]interface{}{"namespace": namespace, "name": name},
	}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}
