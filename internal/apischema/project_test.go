package apischema_test

import (
	"os"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
)

// TestPROJECTMatchesTheScheme keeps the kubebuilder PROJECT file true to the
// API: the same group, version and kinds as the generated CRDs, all namespaced.
func TestPROJECTMatchesTheScheme(t *testing.T) {
	data, err := os.ReadFile("../../PROJECT")
	if err != nil {
		t.Fatal(err)
	}
	var project struct {
		Domain    string `json:"domain"`
		Repo      string `json:"repo"`
		Resources []struct {
			API struct {
				Namespaced bool `json:"namespaced"`
			} `json:"api"`
			Domain  string `json:"domain"`
			Group   string `json:"group"`
			Kind    string `json:"kind"`
			Path    string `json:"path"`
			Version string `json:"version"`
		} `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &project); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range project.Resources {
		if got := r.Group + "." + r.Domain; got != v1alpha1.Group || r.Version != v1alpha1.Version {
			t.Errorf("%s: group %s version %s, want %s %s", r.Kind, got, r.Version, v1alpha1.Group, v1alpha1.Version)
		}
		if r.Path != project.Repo+"/apis/"+v1alpha1.Version {
			t.Errorf("%s: path %s", r.Kind, r.Path)
		}
		res, ok := apischema.Default().ForKind(r.Kind)
		if !ok {
			t.Errorf("PROJECT names kind %s, which has no CRD", r.Kind)
			continue
		}
		if res.Namespaced != r.API.Namespaced {
			t.Errorf("%s: namespaced %v in PROJECT, %v in the CRD", r.Kind, r.API.Namespaced, res.Namespaced)
		}
		kinds = append(kinds, r.Kind)
	}
	for _, res := range apischema.Default().Resources() {
		if !slices.Contains(kinds, res.Kind) {
			t.Errorf("kind %s has a CRD but is missing from PROJECT", res.Kind)
		}
	}
}
