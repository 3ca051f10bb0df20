package aictl

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"aicli.dev/aicli/internal/apischema"
)

// seedAgents applies agents in two namespaces and gives one a Ready status.
func seedAgents(t *testing.T, srv testServer) {
	t.Helper()
	dir := t.TempDir()
	docs := fmt.Sprintf(agentYAML, "alpha", "opus") + "---\n" + strings.Replace(fmt.Sprintf(agentYAML, "bravo", "sonnet"),
		"metadata:\n", "metadata:\n  labels: {team: b}\n", 1)
	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, dir, "a.yaml", docs)), 0)
	wantCode(t, aictl(t, srv.URL, "apply", "-n", "other", "-f", writeFile(t, dir, "c.yaml", fmt.Sprintf(agentYAML, "charlie", "x"))), 0)
	setReady(t, srv, "agents", "default", "alpha", "True", 1, 1)
	srv.Mutate(t, "agents", "default", "alpha", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, int64(4), "status", "inboxUnread")
		_ = unstructured.SetNestedField(o.Object, "alpha-1", "status", "liveConversation")
	})
}

var spaces = regexp.MustCompile(` {3,}`)

// cells splits a table into rows of cells (columns are separated by 3+ spaces).
func cells(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rows = append(rows, spaces.Split(strings.TrimRight(line, " "), -1))
	}
	return rows
}

func TestGetTableFromPrintColumns(t *testing.T) {
	srv := unixServer(t)
	seedAgents(t, srv)

	r := aictl(t, srv.URL, "get", "agents")
	wantCode(t, r, 0)
	rows := cells(r.out)
	want := [][]string{
		{"NAME", "HARNESS", "MODEL", "READY", "LIVE", "UNREAD", "AGE"},
		{"alpha", "fake", "opus", "True", "alpha-1", "4", rows[1][len(rows[1])-1]},
		{"bravo", "fake", "sonnet", "<none>", "<none>", "<none>", rows[2][len(rows[2])-1]},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Fatalf("table:\n%s\nwant %v", r.out, want)
	}
	// The store stamps creationTimestamp; longer ages: TestDateColumnsPrintAges.
	for _, row := range rows[1:] {
		if !regexp.MustCompile(`^\d+s$`).MatchString(row[6]) {
			t.Fatalf("age of a new object = %q", row[6])
		}
	}

	r = aictl(t, srv.URL, "get", "ag", "-o", "wide")
	wantCode(t, r, 0)
	rows = cells(r.out)
	if strings.Join(rows[0], ",") != "NAME,HARNESS,MODEL,READY,LIVE,UNREAD,REASON,AGE" ||
		strings.Join(rows[1][:7], ",") != "alpha,fake,opus,True,alpha-1,4,Succeeded" {
		t.Fatalf("wide table:\n%s", r.out)
	}

	r = aictl(t, srv.URL, "get", "agents", "-A")
	wantCode(t, r, 0)
	rows = cells(r.out)
	if rows[0][0] != "NAMESPACE" || rows[0][1] != "NAME" || len(rows) != 4 {
		t.Fatalf("all namespaces:\n%s", r.out)
	}
	found := false
	for _, row := range rows {
		found = found || (row[0] == "other" && row[1] == "charlie")
	}
	if !found {
		t.Fatalf("-A misses other/charlie:\n%s", r.out)
	}

	r = aictl(t, srv.URL, "get", "agents", "-l", "team=b", "-o", "name")
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev/bravo\n" {
		t.Fatalf("-l -o name: %q", r.out)
	}

	r = aictl(t, srv.URL, "get", "agent", "alpha", "-o", "yaml")
	wantCode(t, r, 0)
	var one map[string]any
	if err := yaml.Unmarshal([]byte(r.out), &one); err != nil || one["kind"] != "Agent" {
		t.Fatalf("-o yaml single: %v\n%s", err, r.out)
	}

	r = aictl(t, srv.URL, "get", "agents", "-o", "json")
	wantCode(t, r, 0)
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.out), &list); err != nil || list.Kind != "List" || len(list.Items) != 2 {
		t.Fatalf("-o json list: %v\n%s", err, r.out)
	}

	r = aictl(t, srv.URL, "get", "agent/alpha", "agent/bravo", "-o", "name")
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev/alpha\nagent.aicli.dev/bravo\n" {
		t.Fatalf("KIND/NAME form: %q", r.out)
	}
}

func TestGetEmptyMissingAndBadInput(t *testing.T) {
	srv := unixServer(t)
	r := aictl(t, srv.URL, "get", "grants", "-n", "empty")
	wantCode(t, r, 0)
	if r.out != "" || r.err != "No resources found in empty namespace.\n" {
		t.Fatalf("empty list: out %q err %q", r.out, r.err)
	}
	r = aictl(t, srv.URL, "get", "agent", "ghost")
	wantCode(t, r, 1)
	if r.err != "Error from server (NotFound): agents.aicli.dev \"ghost\" not found\n" {
		t.Fatalf("not found: %q", r.err)
	}
	r = aictl(t, srv.URL, "get", "widgets")
	wantCode(t, r, 1)
	if r.err != "error: the server doesn't have a resource type \"widgets\"\n" {
		t.Fatalf("unknown kind: %q", r.err)
	}
	r = aictl(t, srv.URL, "get", "agents", "-o", "xml")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, `unknown output format "xml"`) {
		t.Fatalf("bad -o: %q", r.err)
	}
}

func TestDateColumnsPrintAges(t *testing.T) {
	res, _ := apischema.Default().Lookup("agents")
	p, err := newTablePrinter(res, false, false)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return now }
	for _, c := range []struct {
		ago  time.Duration
		want string
	}{{5 * time.Second, "5s"}, {3 * time.Minute, "3m"}, {150 * time.Second, "2m30s"}, {5 * time.Hour, "5h"}, {20 * time.Hour, "20h"}, {4 * 24 * time.Hour, "4d"}, {400 * 24 * time.Hour, "400d"}} {
		obj := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{
			"name": "x", "creationTimestamp": now.Add(-c.ago).Format(time.RFC3339)}}}
		row := p.row(obj)
		if got := row[len(row)-1]; got != c.want {
			t.Errorf("%v ago: age %q, want %q", c.ago, got, c.want)
		}
	}
}

func TestGetWatchStreamsRows(t *testing.T) {
	srv := unixServer(t)
	dir := t.TempDir()
	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, dir, "a.yaml", fmt.Sprintf(agentYAML, "first", "m"))), 0)

	out, stop, wait := started(t, srv.URL, "get", "agents", "-w")
	eventually(t, "the listing shows first", func() bool { return strings.Contains(out.String(), "first") })
	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, dir, "b.yaml", fmt.Sprintf(agentYAML, "second", "m"))), 0)
	eventually(t, "a row for second streams in", func() bool { return strings.Contains(out.String(), "second") })
	setReady(t, srv, "agents", "default", "first", "True", 1, 1)
	eventually(t, "first turns Ready", func() bool { return regexp.MustCompile(`first +fake +m +True`).MatchString(out.String()) })
	stop()
	r := wait()
	wantCode(t, r, 0)
	if strings.Count(r.out, "NAME") != 1 || len(cells(r.out)) != 4 {
		t.Fatalf("watch output (one header, three rows):\n%s", r.out)
	}

	// -o name with a name streams only that object.
	out, stop, wait = started(t, srv.URL, "get", "agent", "second", "-w", "-o", "name")
	eventually(t, "the first line", func() bool { return out.String() == "agent.aicli.dev/second\n" })
	setReady(t, srv, "agents", "default", "first", "False", 1, 1)
	setReady(t, srv, "agents", "default", "second", "True", 1, 1)
	eventually(t, "the change of second", func() bool { return strings.Count(out.String(), "second") == 2 })
	stop()
	if r := wait(); r.code != 0 || strings.Contains(r.out, "first") {
		t.Fatalf("named watch: code %d out %q", r.code, r.out)
	}
}

func TestGetWatchResumesWhenTheServerEndsTheStream(t *testing.T) {
	srv := unixServer(t)
	dir := t.TempDir()
	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, dir, "a.yaml", fmt.Sprintf(agentYAML, "one", "m"))), 0)
	out, stop, wait := started(t, srv.URL, "get", "agents", "-w", "-o", "name")
	eventually(t, "the watch is open", func() bool { return srv.Watches() == 1 })
	srv.EndWatches()
	// Written while no watch is open: the resumed watch must replay it from
	// the last version seen.
	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, dir, "b.yaml", fmt.Sprintf(agentYAML, "two", "m"))), 0)
	eventually(t, "the change made between streams arrives", func() bool { return strings.Contains(out.String(), "agent.aicli.dev/two") })
	eventually(t, "the watch is open again", func() bool { return srv.Watches() == 1 })
	stop()
	r := wait()
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev/one\nagent.aicli.dev/two\n" {
		t.Fatalf("output %q", r.out)
	}
}

func TestGetSeveralKinds(t *testing.T) {
	srv := unixServer(t)
	wantCode(t, aictl(t, srv.URL, "apply", "-f", "../../config/samples"), 0)
	r := aictl(t, srv.URL, "get", "agents,conv,grants")
	wantCode(t, r, 0)
	parts := strings.Split(r.out, "\n\n")
	if len(parts) != 3 || !strings.HasPrefix(parts[0], "NAME ") || !strings.Contains(parts[0], "HARNESS") ||
		!strings.Contains(parts[1], "echo-1") || !strings.Contains(parts[2], "coder-tools") {
		t.Fatalf("several kinds:\n%s", r.out)
	}
	r = aictl(t, srv.URL, "get", "ma,conversations", "-o", "name")
	wantCode(t, r, 0)
	if r.out != "monitorattachment.aicli.dev/reviewer-watches-coder\nconversation.aicli.dev/echo-1\n" {
		t.Fatalf("several kinds -o name: %q", r.out)
	}
	r = aictl(t, srv.URL, "get", "agents,widgets")
	wantCode(t, r, 1)
	r = aictl(t, srv.URL, "get", "agents,grants", "-o", "yaml")
	wantCode(t, r, 1)
}

func TestShellCompletion(t *testing.T) {
	srv := unixServer(t)
	wantCode(t, aictl(t, srv.URL, "apply", "-f", "../../config/samples"), 0)
	r := aictl(t, srv.URL, "__complete", "get", "")
	wantCode(t, r, 0)
	if !strings.HasPrefix(r.out, "agents\nconversations\ngrants\nmonitorattachments\nnamespacepolicies\ntoolclasses\n:4\n") {
		t.Fatalf("kinds:\n%s", r.out)
	}
	r = aictl(t, srv.URL, "__complete", "describe", "ag", "re")
	wantCode(t, r, 0)
	if !strings.HasPrefix(r.out, "researcher\nreviewer\n:4\n") {
		t.Fatalf("names:\n%s", r.out)
	}
	r = aictl(t, srv.URL, "__complete", "delete", "conv", "-n", "empty", "")
	wantCode(t, r, 0)
	if !strings.HasPrefix(r.out, ":4\n") {
		t.Fatalf("names in an empty namespace:\n%s", r.out)
	}
}

func TestGetWatchYAMLStreamsDocuments(t *testing.T) {
	srv := unixServer(t)
	dir := t.TempDir()
	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, dir, "a.yaml", fmt.Sprintf(agentYAML, "first", "m"))), 0)
	out, stop, wait := started(t, srv.URL, "get", "agents", "-w", "-o", "yaml")
	eventually(t, "the first document", func() bool { return strings.Contains(out.String(), "name: first") })
	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, dir, "b.yaml", fmt.Sprintf(agentYAML, "second", "m"))), 0)
	eventually(t, "the second document", func() bool { return strings.Contains(out.String(), "name: second") })
	stop()
	r := wait()
	wantCode(t, r, 0)
	docs := strings.Split(strings.TrimPrefix(r.out, "---\n"), "---\n")
	if len(docs) != 2 {
		t.Fatalf("want two yaml documents:\n%s", r.out)
	}
	for _, d := range docs {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil || m["kind"] != "Agent" {
			t.Fatalf("document %q: %v", d, err)
		}
	}
}
