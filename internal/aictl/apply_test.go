package aictl

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/apischema"
)

const multiDoc = `---
apiVersion: aicli.dev/v1alpha1
kind: Agent
metadata:
  name: alpha
  labels: {team: a}
spec:
  harness: fake
---
# a comment-only document is skipped
---
apiVersion: aicli.dev/v1alpha1
kind: Conversation
metadata:
  name: alpha-1
spec:
  agentRef: alpha
`

func TestApplyMultiDocumentThenUnchanged(t *testing.T) {
	srv := unixServer(t)
	f := writeFile(t, t.TempDir(), "all.yaml", multiDoc)

	r := aictl(t, srv.URL, "apply", "-f", f)
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev/alpha created\nconversation.aicli.dev/alpha-1 created\n" {
		t.Fatalf("first apply output:\n%s", r.out)
	}
	before := srv.Object(t, "agents", "default", "alpha")

	// A controller adds a finalizer and status; re-applying the unchanged file
	// must keep them and change nothing.
	srv.Mutate(t, "agents", "default", "alpha", func(o *unstructured.Unstructured) {
		o.SetFinalizers([]string{"aicli.dev/home"})
	})
	setReady(t, srv, "agents", "default", "alpha", "True", 1, 1)
	mid := srv.Object(t, "agents", "default", "alpha")

	r = aictl(t, srv.URL, "apply", "-f", f)
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev/alpha unchanged\nconversation.aicli.dev/alpha-1 unchanged\n" {
		t.Fatalf("re-apply output:\n%s", r.out)
	}
	after := srv.Object(t, "agents", "default", "alpha")
	if after.GetResourceVersion() != mid.GetResourceVersion() || after.GetGeneration() != before.GetGeneration() {
		t.Fatalf("unchanged re-apply wrote: rv %s→%s gen %d→%d", mid.GetResourceVersion(), after.GetResourceVersion(),
			before.GetGeneration(), after.GetGeneration())
	}

	// A spec change configures and bumps generation; server metadata stays.
	changed := strings.Replace(multiDoc, "harness: fake", "harness: claude", 1)
	changed = strings.Replace(changed, "labels: {team: a}", "labels: {team: b}", 1)
	f2 := writeFile(t, t.TempDir(), "all.yaml", changed)
	r = aictl(t, srv.URL, "apply", "-f", f2)
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev/alpha configured\nconversation.aicli.dev/alpha-1 unchanged\n" {
		t.Fatalf("changed apply output:\n%s", r.out)
	}
	got := srv.Object(t, "agents", "default", "alpha")
	if got.GetGeneration() != 2 || got.GetLabels()["team"] != "b" {
		t.Fatalf("after change: generation %d labels %v", got.GetGeneration(), got.GetLabels())
	}
	if fs := got.GetFinalizers(); len(fs) != 1 || fs[0] != "aicli.dev/home" {
		t.Fatalf("apply dropped server-side finalizers: %v", fs)
	}
	if _, found, _ := unstructured.NestedSlice(got.Object, "status", "conditions"); !found {
		t.Fatal("apply dropped status")
	}
}

func TestApplyDirectoryStdinAndNamespace(t *testing.T) {
	srv := unixServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "b.yaml", fmt.Sprintf(agentYAML, "bravo", "m"))
	writeFile(t, dir, "a.json", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"alpha"},"spec":{"harness":"fake"}}`)
	writeFile(t, dir, "notes.txt", "not a manifest")

	r := aictl(t, srv.URL, "apply", "-f", dir, "-n", "team-a")
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev/alpha created\nagent.aicli.dev/bravo created\n" {
		t.Fatalf("dir apply output (want sorted files):\n%s", r.out)
	}
	if srv.Object(t, "agents", "team-a", "bravo") == nil {
		t.Fatal("-n did not set the namespace")
	}

	ctx := context.Background()
	r = aictlIn(t, ctx, srv.URL, fmt.Sprintf(agentYAML, "charlie", "m"), "apply", "-f", "-")
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev/charlie created\n" || srv.Object(t, "agents", "default", "charlie") == nil {
		t.Fatalf("stdin apply: %q", r.out)
	}

	// An object naming another namespace than an explicit -n is refused.
	r = aictlIn(t, ctx, srv.URL, strings.Replace(fmt.Sprintf(agentYAML, "delta", "m"), "metadata:\n", "metadata:\n  namespace: x\n", 1),
		"apply", "-f", "-", "-n", "y")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, `does not match the namespace "y"`) {
		t.Fatalf("namespace mismatch: %q", r.err)
	}
}

func TestApplyUnknownFieldNamesFileAndDocument(t *testing.T) {
	srv := unixServer(t)
	bad := fmt.Sprintf(agentYAML, "good", "m") + "---\n" + fmt.Sprintf(agentYAML, "bad", "m") + "  colour: red\n"
	f := writeFile(t, t.TempDir(), "agents.yaml", bad)
	r := aictl(t, srv.URL, "apply", "-f", f)
	wantCode(t, r, 1)
	if r.out != "agent.aicli.dev/good created\n" {
		t.Fatalf("the valid document must still apply: %q", r.out)
	}
	want := fmt.Sprintf(`Error from server (BadRequest): error when applying %q (document 2): `, f)
	if !strings.HasPrefix(r.err, want) || !strings.Contains(r.err, `unknown field "spec.colour"`) {
		t.Fatalf("stderr:\n%s\nwant prefix %s and the unknown field", r.err, want)
	}
	if srv.Object(t, "agents", "default", "bad") != nil {
		t.Fatal("invalid object stored")
	}

	// The same on update: the object exists, the file gains an unknown field.
	f2 := writeFile(t, t.TempDir(), "good.yaml", fmt.Sprintf(agentYAML, "good", "m")+"  colour: red\n")
	r = aictl(t, srv.URL, "apply", "-f", f2)
	wantCode(t, r, 1)
	if !strings.Contains(r.err, `unknown field "spec.colour"`) {
		t.Fatalf("update with unknown field: %q", r.err)
	}

	// Unknown metadata fields are not silently dropped on update either.
	f3 := writeFile(t, t.TempDir(), "good.yaml", strings.Replace(fmt.Sprintf(agentYAML, "good", "m"), "metadata:\n", "metadata:\n  colour: red\n", 1))
	r = aictl(t, srv.URL, "apply", "-f", f3)
	wantCode(t, r, 1)
	if !strings.Contains(r.err, `unknown field "metadata.colour"`) {
		t.Fatalf("update with unknown metadata field: %q", r.err)
	}
}

func TestApplyInputErrors(t *testing.T) {
	srv := unixServer(t)
	dir := t.TempDir()
	cases := []struct{ name, content, want string }{
		{"malformed.yaml", "apiVersion: [unclosed\n", `error parsing`},
		{"nokind.yaml", "apiVersion: aicli.dev/v1alpha1\nmetadata: {name: x}\n", `object 'kind' is missing`},
		{"foreign.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", `no matches for kind "Pod" in version "v1"`},
		{"noname.yaml", "apiVersion: aicli.dev/v1alpha1\nkind: Agent\nspec: {harness: fake}\n", `'metadata.name' is missing`},
	}
	for _, c := range cases {
		r := aictl(t, srv.URL, "apply", "-f", writeFile(t, dir, c.name, c.content))
		wantCode(t, r, 1)
		if !strings.HasPrefix(r.err, "error: ") || !strings.Contains(r.err, c.want) {
			t.Errorf("%s: stderr %q, want %q", c.name, r.err, c.want)
		}
	}
	r := aictl(t, srv.URL, "apply", "-f", dir+"/missing.yaml")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "does not exist") {
		t.Errorf("missing file: %q", r.err)
	}
}

func TestApplyRetriesOnConflict(t *testing.T) {
	srv := unixServer(t)
	f := writeFile(t, t.TempDir(), "a.yaml", fmt.Sprintf(agentYAML, "racy", "one"))
	wantCode(t, aictl(t, srv.URL, "apply", "-f", f), 0)

	// The first update races with a controller's status write: it conflicts
	// and apply must re-read and retry.
	var puts atomic.Int32
	srv.BeforeServe(func(r *http.Request) {
		if r.Method == http.MethodPut && puts.Add(1) == 1 {
			setReady(t, srv, "agents", "default", "racy", "True", 1, 1)
		}
	})
	f2 := writeFile(t, t.TempDir(), "a.yaml", fmt.Sprintf(agentYAML, "racy", "two"))
	r := aictl(t, srv.URL, "apply", "-f", f2)
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev/racy configured\n" || puts.Load() != 2 {
		t.Fatalf("output %q after %d PUTs", r.out, puts.Load())
	}
	if m, _, _ := unstructured.NestedString(srv.Object(t, "agents", "default", "racy").Object, "spec", "model"); m != "two" {
		t.Fatalf("model = %q", m)
	}
}

func TestApplyOfGetOutputCreatesElsewhere(t *testing.T) {
	srv := unixServer(t)
	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, t.TempDir(), "a.yaml", fmt.Sprintf(agentYAML, "src", "m"))), 0)
	setReady(t, srv, "agents", "default", "src", "True", 1, 1)
	r := aictl(t, srv.URL, "get", "agent", "src", "-o", "yaml")
	wantCode(t, r, 0)
	// The export carries uid, resourceVersion, generation, timestamps and
	// status: apply must create from it (a server refuses a resourceVersion
	// on create), and diff must show it as new.
	exported := writeFile(t, t.TempDir(), "src.yaml", strings.Replace(r.out, "namespace: default", "namespace: copy", 1))
	r = aictl(t, srv.URL, "diff", "-f", exported)
	wantCode(t, r, 1)
	r = aictl(t, srv.URL, "apply", "-f", exported)
	wantCode(t, r, 0)
	got := srv.Object(t, "agents", "copy", "src")
	if got == nil || got.GetGeneration() != 1 || got.GetUID() == srv.Object(t, "agents", "default", "src").GetUID() {
		t.Fatalf("copy: %v", got)
	}
	if _, found, _ := unstructured.NestedMap(got.Object, "status"); found {
		t.Fatal("status was created from the file")
	}
}

func TestApplyServerDryRun(t *testing.T) {
	srv := unixServer(t)
	f := writeFile(t, t.TempDir(), "a.yaml", fmt.Sprintf(agentYAML, "dry", "m"))
	r := aictl(t, srv.URL, "apply", "-f", f, "--dry-run=server")
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev/dry created (server dry run)\n" || srv.Object(t, "agents", "default", "dry") != nil {
		t.Fatalf("dry run: %q stored=%v", r.out, srv.Object(t, "agents", "default", "dry") != nil)
	}
}

// TestSamplesApplyCleanly checks every sample against the real validator and
// applies the directory twice.
func TestSamplesApplyCleanly(t *testing.T) {
	const dir = "../../config/samples"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	reg := apischema.Default()
	kinds := map[string]int{}
	harnesses := map[string]bool{}
	for _, e := range entries {
		fh, err := os.Open(dir + "/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		ms, err := decodeManifests(fh, e.Name(), reg)
		_ = fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		for _, m := range ms {
			data, _ := m.obj.MarshalJSON()
			if _, err := reg.Decode(m.res, "default", data); err != nil {
				t.Errorf("%s: %v", e.Name(), err)
			}
			kinds[m.obj.GetKind()]++
			if h, _, _ := unstructured.NestedString(m.obj.Object, "spec", "harness"); h != "" {
				harnesses[h] = true
			}
		}
	}
	for _, k := range []string{"Agent", "Conversation", "Grant", "MonitorAttachment"} {
		if kinds[k] == 0 {
			t.Errorf("no %s sample", k)
		}
	}
	for _, h := range []string{"fake", "claude", "codex", "gemini", "opencode"} {
		if !harnesses[h] {
			t.Errorf("no agent sample for harness %s", h)
		}
	}

	srv := unixServer(t)
	r := aictl(t, srv.URL, "apply", "-f", dir)
	wantCode(t, r, 0)
	if n := strings.Count(r.out, " created\n"); n != len(entries) {
		t.Fatalf("created %d of %d:\n%s", n, len(entries), r.out)
	}
	r = aictl(t, srv.URL, "apply", "-f", dir)
	wantCode(t, r, 0)
	if n := strings.Count(r.out, " unchanged\n"); n != len(entries) {
		t.Fatalf("re-apply not unchanged:\n%s", r.out)
	}
}

func TestDecodeManifestsJSONStreamAndList(t *testing.T) {
	reg := apischema.Default()
	stream := `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake"}}
{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"g"},"spec":{"subject":"a"}}`
	ms, err := decodeManifests(strings.NewReader(stream), "s.json", reg)
	if err != nil || len(ms) != 2 || ms[1].res.Plural != "grants" || ms[1].index != 2 {
		t.Fatalf("JSON stream: %v %+v", err, ms)
	}
	list := `apiVersion: v1
kind: List
items:
- apiVersion: aicli.dev/v1alpha1
  kind: Agent
  metadata: {name: x}
  spec: {harness: fake}
- apiVersion: aicli.dev/v1alpha1
  kind: Conversation
  metadata: {name: yes}
  spec: {agentRef: x}
`
	// YAML reads an unquoted yes as a boolean: the message says so.
	_, err = decodeManifests(strings.NewReader(list), "l.yaml", reg)
	if err == nil || !strings.Contains(err.Error(), "metadata.name must be a string, not bool true") {
		t.Fatalf("boolean name: %v", err)
	}
	ms, err = decodeManifests(strings.NewReader(strings.Replace(list, "{name: yes}", `{name: "yes"}`, 1)), "l.yaml", reg)
	if err != nil || len(ms) != 2 || ms[0].obj.GetName() != "x" || ms[1].res.Kind != "Conversation" || ms[1].index != 1 {
		t.Fatalf("List: %v %+v", err, ms)
	}
}

func TestMissingArgumentsExplainThemselves(t *testing.T) {
	srv := unixServer(t)
	for args, want := range map[string]string{
		"get":                           "you must specify the type of resource",
		"describe agents":               "describe needs a name",
		"wait --for=delete":             "you must specify the type of resource",
		"apply":                         "must specify -f FILENAME",
		"delete agents":                 "delete needs names",
		"get agent/":                    "resource/name form",
		"wait --for=ready agent/x":      "--for must be delete or condition=TYPE[=STATUS]",
		"apply -f x.yaml --dry-run=all": `--dry-run must be "none" or "server"`,
	} {
		r := aictl(t, srv.URL, strings.Fields(args)...)
		if r.code == 0 || !strings.Contains(r.err, want) {
			t.Errorf("aictl %s: code %d stderr %q, want %q", args, r.code, r.err, want)
		}
	}
}
