package builtin

import (
	"testing"

	"aicli.dev/aicli/apis/v1alpha1"
)

// TestEveryAPIHarnessIsWired keeps the registry and the API's harness enum
// in step: an Agent may name only a harness the guest can run.
func TestEveryAPIHarnessIsWired(t *testing.T) {
	reg, err := Registry(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []v1alpha1.Harness{v1alpha1.HarnessClaude, v1alpha1.HarnessCodex, v1alpha1.HarnessGemini,
		v1alpha1.HarnessOpenCode, v1alpha1.HarnessFake} {
		if _, err := reg.Lookup(string(h)); err != nil {
			t.Errorf("harness %s is in the API but not in the guest's registry", h)
		}
	}
}
