package aictl

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/apiserver/apiservertest"
)

func TestDiffExitCodes(t *testing.T) {
	srv := unixServer(t)
	dir := t.TempDir()
	f := writeFile(t, dir, "a.yaml", fmt.Sprintf(agentYAML, "d", "one"))

	// Absent: everything is added, including server defaults from the dry run.
	r := aictl(t, srv.URL, "diff", "-f", f)
	wantCode(t, r, 1)
	if !strings.HasPrefix(r.out, "--- LIVE/aicli.dev.v1alpha1.Agent.default.d\n+++ MERGED/aicli.dev.v1alpha1.Agent.default.d\n") ||
		!strings.Contains(r.out, "+    memoryMiB: 2048\n") || strings.Contains(r.out, "\n-") {
		t.Fatalf("diff of a new object:\n%s", r.out)
	}
	if srv.Object(t, "agents", "default", "d") != nil {
		t.Fatal("diff stored the object")
	}

	wantCode(t, aictl(t, srv.URL, "apply", "-f", f), 0)
	r = aictl(t, srv.URL, "diff", "-f", f)
	wantCode(t, r, 0)
	if r.out != "" {
		t.Fatalf("no-change diff printed:\n%s", r.out)
	}

	before := srv.Object(t, "agents", "default", "d").GetResourceVersion()
	f2 := writeFile(t, dir, "b.yaml", fmt.Sprintf(agentYAML, "d", "two"))
	r = aictl(t, srv.URL, "diff", "-f", f2)
	wantCode(t, r, 1)
	// The server's dry-run preview keeps the stored generation.
	if !strings.Contains(r.out, "-  model: one\n+  model: two\n") || strings.Contains(r.out, "generation:") {
		t.Fatalf("changed diff:\n%s", r.out)
	}
	if got := srv.Object(t, "agents", "default", "d"); got.GetResourceVersion() != before {
		t.Fatal("diff modified the live object")
	}

	bad := writeFile(t, dir, "c.yaml", fmt.Sprintf(agentYAML, "d", "two")+"  colour: red\n")
	r = aictl(t, srv.URL, "diff", "-f", bad)
	wantCode(t, r, 2)
	if !strings.Contains(r.err, `Error from server (BadRequest): error when diffing`) {
		t.Fatalf("diff of an invalid file: %q", r.err)
	}
	r = aictl(t, "unix://"+t.TempDir()+"/no.sock", "diff", "-f", f)
	wantCode(t, r, 2)
	if !strings.Contains(r.err, "is the supervisor running?") {
		t.Fatalf("unreachable server: %q", r.err)
	}
}

func TestDescribeShowsConditionsAndHistory(t *testing.T) {
	srv := unixServer(t)
	dir := t.TempDir()
	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, dir, "a.yaml", fmt.Sprintf(agentYAML, "desc", "one"))), 0)
	setReady(t, srv, "agents", "default", "desc", "False", 1, 1)
	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, dir, "a.yaml", fmt.Sprintf(agentYAML, "desc", "two"))), 0)
	setReady(t, srv, "agents", "default", "desc", "True", 2, 2)

	r := aictl(t, srv.URL, "describe", "agent", "desc")
	wantCode(t, r, 0)
	for _, want := range []string{
		`(?m)^Name: +desc$`, `(?m)^Namespace: +default$`, `(?m)^Generation: +2$`,
		`(?m)^Spec:\n  harness: fake\n  model: two\n`,
		`(?m)^  Observed Generation:  2$`,
		`(?m)^    TYPE +STATUS +REASON +MESSAGE +AGE +OBSERVED GENERATION$`,
		`(?m)^    Ready +True +Succeeded +all good +\d+s +2$`,
		`(?m)^  TYPE +AGE +RESOURCE VERSION +CHANGE$`,
		`(?m)^  ADDED +\d+s +\d+ +created \(generation 1\)$`,
		`(?m)^  STATUS +\d+s +\d+ +Ready=False \(Succeeded, generation 1\); status.observedGeneration: 1$`,
		`(?m)^  MODIFIED +\d+s +\d+ +spec.model: "one" → "two"$`,
		`(?m)^  STATUS +\d+s +\d+ +Ready=True \(Succeeded, generation 2\); status.observedGeneration: 1 → 2$`,
	} {
		if !regexp.MustCompile(want).MatchString(r.out) {
			t.Errorf("describe output lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("describe output:\n%s", r.out)
	}

	r = aictl(t, srv.URL, "describe", "agent", "ghost")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "(NotFound)") {
		t.Fatalf("describe missing: %q", r.err)
	}
}

func TestAuthErrorsOverTLS(t *testing.T) {
	url, caFile := apiservertest.New(t).ServeTLS(t, map[string][]string{"team-a-token": {"team-a"}})
	srv := testServer{URL: url}
	ca := "--certificate-authority=" + caFile

	r := aictl(t, srv.URL, ca, "get", "agents", "-n", "team-a")
	wantCode(t, r, 1)
	if !strings.HasPrefix(r.err, "error: You must be logged in to the server (Unauthorized): ") {
		t.Fatalf("no token: %q", r.err)
	}
	r = aictl(t, srv.URL, ca, "--token", "wrong", "get", "agents", "-n", "team-a")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "(Unauthorized)") {
		t.Fatalf("bad token: %q", r.err)
	}
	r = aictl(t, srv.URL, ca, "--token", "team-a-token", "get", "agents", "-n", "team-b")
	wantCode(t, r, 1)
	if !strings.HasPrefix(r.err, "Error from server (Forbidden): ") || !strings.Contains(r.err, `namespace "team-b"`) {
		t.Fatalf("other namespace: %q", r.err)
	}
	r = aictl(t, srv.URL, ca, "--token", "team-a-token", "get", "agents", "-A")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "(Forbidden)") {
		t.Fatalf("all namespaces with a namespaced token: %q", r.err)
	}

	t.Setenv("AICLI_TOKEN", "team-a-token")
	f := writeFile(t, t.TempDir(), "a.yaml", fmt.Sprintf(agentYAML, "secure", "m"))
	r = aictl(t, srv.URL, ca, "apply", "-f", f, "-n", "team-a")
	wantCode(t, r, 0)
	r = aictl(t, srv.URL, "--insecure-skip-tls-verify", "get", "agents", "-n", "team-a", "-o", "name")
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev/secure\n" {
		t.Fatalf("token from AICLI_TOKEN with --insecure-skip-tls-verify: %q", r.out)
	}
	r = aictl(t, srv.URL, "get", "agents", "-n", "team-a")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "certificate") {
		t.Fatalf("unverified certificate must be refused: %q", r.err)
	}
}

func TestAPIResources(t *testing.T) {
	srv := unixServer(t)
	r := aictl(t, srv.URL, "api-resources")
	wantCode(t, r, 0)
	rows := cells(r.out)
	if len(rows) != 7 || strings.Join(rows[1], ",") != "agents,ag,aicli.dev/v1alpha1,true,Agent" ||
		strings.Join(rows[6], ",") != "toolclasses,tc,aicli.dev/v1alpha1,false,ToolClass" {
		t.Fatalf("api-resources:\n%s", r.out)
	}
}

func TestMergeForApplyKeepsServerMetadata(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "aicli.dev/v1alpha1", "kind": "Agent",
		"metadata": map[string]any{"name": "x", "namespace": "default", "resourceVersion": "7", "uid": "u",
			"finalizers": []any{"f"}, "labels": map[string]any{"old": "1"}, "ownerReferences": []any{map[string]any{"name": "o"}}},
		"spec":   map[string]any{"harness": "fake", "model": "a"},
		"status": map[string]any{"observedGeneration": int64(1)},
	}}
	file := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "aicli.dev/v1alpha1", "kind": "Agent",
		"metadata": map[string]any{"name": "x", "labels": map[string]any{"new": "2"}, "resourceVersion": "1"},
		"spec":     map[string]any{"harness": "claude"},
		"status":   map[string]any{"observedGeneration": int64(9)},
	}}
	got := mergeForApply(live, file)
	if got.GetResourceVersion() != "7" || got.GetUID() != "u" || len(got.GetFinalizers()) != 1 || len(got.GetOwnerReferences()) != 1 {
		t.Fatalf("server metadata lost: %v", got.Object["metadata"])
	}
	if fmt.Sprint(got.GetLabels()) != "map[new:2]" || fmt.Sprint(got.Object["spec"]) != "map[harness:claude]" {
		t.Fatalf("file fields not taken: labels %v spec %v", got.GetLabels(), got.Object["spec"])
	}
	if og, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration"); og != 1 {
		t.Fatalf("status taken from the file: %d", og)
	}
	if live.GetLabels()["old"] != "1" {
		t.Fatal("mergeForApply mutated the live object")
	}
}
