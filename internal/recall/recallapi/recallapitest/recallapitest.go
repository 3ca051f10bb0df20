// Package recallapitest mounts the recall endpoints on a test API server
// (apiservertest: real store) with agents to reach them through.
package recallapitest

import (
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/recall"
	"aicli.dev/aicli/internal/recall/recallapi"
	"aicli.dev/aicli/internal/toolcalls/toolcallstest"
)

// Mount opens a Recall over srv's store (indexes in a temporary directory,
// closed when the test ends), mounts its API on srv and creates agent
// namespace/name for each of agents ("namespace/name").
func Mount(tb testing.TB, srv *apiservertest.Server, agents ...string) *recall.Recall {
	tb.Helper()
	r, err := recall.Open(srv.Store, filepath.Join(tb.TempDir(), "recall"), recall.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = r.Close() })
	recallapi.Mount(srv.API, r, srv.Store)
	for _, a := range agents {
		ns, name := filepath.Split(a)
		toolcallstest.Create(tb, srv, "agents", &v1alpha1.Agent{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Agent"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: filepath.Clean(ns)},
		})
	}
	return r
}
