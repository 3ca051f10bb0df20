package aictl

import (
	"os"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/apischema"
)

// FuzzDecodeManifests feeds arbitrary bytes through the manifest reader and
// the apply merge: they must fail with an error, never panic. The samples and
// a few hand-made documents are the seed corpus, run by every `go test`.
func FuzzDecodeManifests(f *testing.F) {
	entries, _ := os.ReadDir("../../config/samples")
	for _, e := range entries {
		if b, err := os.ReadFile("../../config/samples/" + e.Name()); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"", "---\n---\n", "kind: List\nitems: [1, {a: b}]\n", `{"kind":"Agent"}{"kind":`, "apiVersion: [\n",
		"apiVersion: aicli.dev/v1alpha1\nkind: Agent\nmetadata: {name: 5, labels: [x]}\nspec: 7\n",
		`{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"g","annotations":null},"spec":{"subject":"a"}}`,
	} {
		f.Add([]byte(s))
	}
	reg := apischema.Default()
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := decodeManifests(strings.NewReader(string(data)), "fuzz", reg)
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.res == nil || m.obj.GetName() == "" {
				t.Fatalf("manifest without resource or name: %+v", m)
			}
			merged := mergeForApply(m.obj, m.obj)
			if _, err := yamlLines(merged); err != nil {
				t.Fatalf("merged object does not encode: %v", err)
			}
		}
	})
}
