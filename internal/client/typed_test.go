package client_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
)

func TestTypedRoundTrip(t *testing.T) {
	_, url := unixServer(t)
	c := newClient(t, client.Config{Server: url})
	defer c.Close()
	in := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "typed", Namespace: "default"},
		Spec: v1alpha1.AgentSpec{Harness: v1alpha1.HarnessCodex, Model: "m"}}
	u, err := c.FromTyped(in)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "aicli.dev/v1alpha1" || u.GetKind() != "Agent" {
		t.Fatalf("type meta not filled: %s %s", u.GetAPIVersion(), u.GetKind())
	}
	created, err := c.Create(ctx(t), u, client.WriteOptions{})
	if err != nil {
		t.Fatalf("create from a typed object: %v", err)
	}
	var out v1alpha1.Agent
	if err := client.ToTyped(created, &out); err != nil {
		t.Fatal(err)
	}
	if out.Spec.Harness != v1alpha1.HarnessCodex || out.Spec.Resources.MemoryMiB != 2048 || out.Generation != 1 {
		t.Fatalf("typed result: %+v", out)
	}
	if _, err := c.FromTyped(&foreign{}); err == nil {
		t.Fatal("FromTyped of a foreign type: want error")
	}
}

// foreign is a runtime.Object outside the aicli.dev scheme.
type foreign struct {
	metav1.TypeMeta `json:",inline"`
}

func (f *foreign) DeepCopyObject() runtime.Object { c := *f; return &c }
