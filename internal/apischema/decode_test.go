package apischema

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestDecode(t *testing.T) {
	reg := Default()
	agents, ok := reg.Lookup("ag")
	if !ok {
		t.Fatal("short name ag not registered")
	}
	valid := `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a1"},"spec":{"harness":"fake"}}`
	cases := []struct {
		name       string
		body       string
		ns         string
		wantCode   int32
		wantSubstr string
	}{
		{"valid", valid, "default", 0, ""},
		{"malformed json", `{"apiVersion":`, "default", 400, "cannot be decoded"},
		{"unknown field", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a1"},"spec":{"harness":"fake","colour":"red"}}`, "default", 400, `unknown field "spec.colour"`},
		{"wrong type", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a1"},"spec":{"harness":"fake","resources":{"pids":"many"}}}`, "default", 400, "spec.resources.pids"},
		{"bad enum", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a1"},"spec":{"harness":"vim"}}`, "default", 422, "spec.harness"},
		{"missing required", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a1"},"spec":{}}`, "default", 422, "spec.harness"},
		{"bad name", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"A_1"},"spec":{"harness":"fake"}}`, "default", 422, "metadata.name"},
		{"bad namespace", valid, "Not_OK", 422, "metadata.namespace"},
		{"namespace mismatch", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a1","namespace":"x"},"spec":{"harness":"fake"}}`, "y", 422, "metadata.namespace"},
		{"wrong kind", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"a1"},"spec":{"harness":"fake"}}`, "default", 422, "kind"},
		{"below minimum", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a1"},"spec":{"harness":"fake","resources":{"pids":1}}}`, "default", 422, "spec.resources.pids"},
		{"oversize", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a1"},"spec":{"harness":"fake","persona":"` + strings.Repeat("x", MaxObjectBytes) + `"}}`, "default", 413, "limit"},
		{"empty", ``, "default", 400, "empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := reg.Decode(agents, tc.ns, []byte(tc.body))
			if tc.wantCode == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("expected error, got object %v", obj)
			}
			status, ok := err.(apierrors.APIStatus)
			if !ok {
				t.Fatalf("error is not a Status: %T %v", err, err)
			}
			if got := status.Status().Code; got != tc.wantCode {
				t.Errorf("code = %d, want %d (%v)", got, tc.wantCode, err)
			}
			if !strings.Contains(err.Error(), tc.wantSubstr) {
				t.Errorf("error %q does not name %q", err, tc.wantSubstr)
			}
		})
	}
}

func TestDecodeDefaults(t *testing.T) {
	reg := Default()
	agents, _ := reg.Lookup("agents")
	obj, err := reg.Decode(agents, "default", []byte(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a1"},"spec":{"harness":"fake"}}`))
	if err != nil {
		t.Fatal(err)
	}
	spec := obj.Object["spec"].(map[string]any)
	res := spec["resources"].(map[string]any)
	if res["pids"] != int64(512) || res["memoryMiB"] != int64(2048) {
		t.Errorf("resources not defaulted: %v", res)
	}
	if spec["provider"].(map[string]any)["credential"] != "None" {
		t.Errorf("provider.credential not defaulted: %v", spec["provider"])
	}
	convs, _ := reg.Lookup("conv")
	c, err := reg.Decode(convs, "default", []byte(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Conversation","metadata":{"generateName":"chat-"},"spec":{"agentRef":"a1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.GetName(), "chat-") || len(c.GetName()) != len("chat-")+5 {
		t.Errorf("generateName not applied: %q", c.GetName())
	}
	if c.Object["spec"].(map[string]any)["desiredState"] != "Active" {
		t.Errorf("desiredState not defaulted")
	}
}
