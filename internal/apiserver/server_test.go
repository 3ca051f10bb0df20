package apiserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/store"
)

const base = apischema.APIPath + "/namespaces/default"

type env struct {
	t     *testing.T
	store *store.Store
	url   string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := apiservertest.New(t)
	return &env{t: t, store: srv.Store, url: srv.ServeLoopback(t, apiserver.LocalAdmin)}
}

func (e *env) do(method, path, contentType, body string) (int, map[string]any) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			e.t.Fatalf("%s %s: non-JSON response %q", method, path, raw)
		}
	}
	return resp.StatusCode, out
}

func agentJSON(name, extra string) string {
	return fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":%q},"spec":{"harness":"fake"%s}}`, name, extra)
}

func grantJSON(name, subject, tools string) string {
	return fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":%q},"spec":{"subject":%s,"tools":%s}}`, name, subject, tools)
}

func meta(obj map[string]any, key string) any { return obj["metadata"].(map[string]any)[key] }

func TestBadInputIsRejectedAndStoreUnchanged(t *testing.T) {
	e := newEnv(t)
	if code, _ := e.do("POST", base+"/agents", "", agentJSON("seed", "")); code != 201 {
		t.Fatalf("seed create: %d", code)
	}
	rv := e.store.CurrentRV()
	cases := []struct {
		name, method, path, body string
		code                     int
		field                    string
	}{
		{"malformed json", "POST", base + "/agents", `{"apiVersion": "aicli.dev/v1alpha1", "kind": "Agent",`, 400, "cannot be decoded"},
		{"yaml is not json", "POST", base + "/agents", "apiVersion: aicli.dev/v1alpha1\nkind: Agent\n", 400, "cannot be decoded"},
		{"unknown field", "POST", base + "/agents", agentJSON("x", `,"flavour":"mint"`), 400, "spec.flavour"},
		{"wrong type", "POST", base + "/agents", agentJSON("x", `,"model":42`), 400, "spec.model"},
		{"bad enum", "POST", base + "/agents", strings.Replace(agentJSON("x", ""), `"fake"`, `"emacs"`, 1), 422, "spec.harness"},
		{"invalid name", "POST", base + "/agents", agentJSON("Not_A_Name", ""), 422, "metadata.name"},
		{"invalid namespace", "POST", apischema.APIPath + "/namespaces/Bad_NS/agents", agentJSON("x", ""), 422, "metadata.namespace"},
		{"over 1 MiB", "POST", base + "/agents", agentJSON("x", `,"persona":"`+strings.Repeat("p", 1<<20)+`"`), 413, "exceeds"},
		{"name mismatch on update", "PUT", base + "/agents/seed", agentJSON("other", ""), 400, "metadata.name"},
		{"unknown resource", "GET", base + "/widgets", "", 404, "widgets"},
		{"patch wrong content type", "PATCH", base + "/agents/seed", `{"spec":{"model":"m"}}`, 415, "merge-patch"},
		{"update missing", "PUT", base + "/agents/ghost", agentJSON("ghost", ""), 404, "ghost"},
		{"cross-namespace grant subject", "POST", base + "/grants", grantJSON("g", `"other-ns/seed"`, `[]`), 422, "spec.subject"},
		{"grant with a duplicate tool", "POST", base + "/grants", grantJSON("g", `"seed"`,
			`[{"name":"t","className":"c"},{"name":"t","className":"c"}]`), 422, "spec.tools[1].name"},
		{"grant with an inline backend", "POST", base + "/grants", grantJSON("g", `"seed"`,
			`[{"name":"t","backend":{"exec":{"command":"/bin/true"}}}]`), 422, "spec.tools[0].backend"},
		{"tool class with a relative command", "POST", "/apis/aicli.dev/v1alpha1/toolclasses",
			`{"apiVersion":"aicli.dev/v1alpha1","kind":"ToolClass","metadata":{"name":"t"},"spec":{"backend":{"exec":{"command":"true"}}}}`,
			422, "spec.backend.exec.command"},
		{"tool class with a namespace", "POST", "/apis/aicli.dev/v1alpha1/toolclasses",
			`{"apiVersion":"aicli.dev/v1alpha1","kind":"ToolClass","metadata":{"name":"t","namespace":"ns"},"spec":{"backend":{"exec":{"command":"/bin/true"}}}}`,
			422, "metadata.namespace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct := ""
			if tc.method == "PATCH" {
				ct = "application/json"
			}
			code, status := e.do(tc.method, tc.path, ct, tc.body)
			if code != tc.code {
				t.Fatalf("code %d, want %d: %v", code, tc.code, status)
			}
			if status["kind"] != "Status" {
				t.Fatalf("error body is not a Status: %v", status)
			}
			if msg, _ := status["message"].(string); !strings.Contains(msg, tc.field) {
				t.Errorf("message %q does not name %q", msg, tc.field)
			}
			if got := e.store.CurrentRV(); got != rv {
				t.Errorf("store changed: rv %d → %d", rv, got)
			}
		})
	}
}

func TestStatusThroughMainResourceIsIgnored(t *testing.T) {
	e := newEnv(t)
	e.do("POST", base+"/agents", "", agentJSON("a", ""))
	code, obj := e.do("PUT", base+"/agents/a", "", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake"},"status":{"liveConversation":"forged"}}`)
	if code != 200 {
		t.Fatalf("update: %d %v", code, obj)
	}
	if obj["status"] != nil {
		if s := obj["status"].(map[string]any); s["liveConversation"] == "forged" {
			t.Fatal("status written through the main resource")
		}
	}
	code, obj = e.do("PUT", base+"/agents/a/status", "", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"claude"},"status":{"liveConversation":"real"}}`)
	if code != 200 || obj["status"].(map[string]any)["liveConversation"] != "real" {
		t.Fatalf("status update: %d %v", code, obj)
	}
	if obj["spec"].(map[string]any)["harness"] != "fake" {
		t.Fatal("spec written through the status subresource")
	}
}

func TestGenerationAndConflicts(t *testing.T) {
	e := newEnv(t)
	_, created := e.do("POST", base+"/agents", "", agentJSON("a", ""))
	rv := meta(created, "resourceVersion").(string)
	// Unchanged re-PUT is a no-op.
	_, same := e.do("PUT", base+"/agents/a", "", agentJSON("a", ""))
	if meta(same, "resourceVersion") != rv || meta(same, "generation") != float64(1) {
		t.Fatalf("no-op update changed rv/generation: %v", same["metadata"])
	}
	// Label change: new rv, same generation.
	_, labelled := e.do("PATCH", base+"/agents/a", "application/merge-patch+json", `{"metadata":{"labels":{"team":"x"}}}`)
	if meta(labelled, "resourceVersion") == rv || meta(labelled, "generation") != float64(1) {
		t.Fatalf("label patch: %v", labelled["metadata"])
	}
	// Spec change bumps generation.
	_, changed := e.do("PATCH", base+"/agents/a", "application/merge-patch+json", `{"spec":{"model":"m1"}}`)
	if meta(changed, "generation") != float64(2) {
		t.Fatalf("spec patch did not bump generation: %v", changed["metadata"])
	}
	// Stale resourceVersion → 409, store unchanged.
	before := e.store.CurrentRV()
	stale := fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a","resourceVersion":%q},"spec":{"harness":"fake","model":"m2"}}`, rv)
	code, status := e.do("PUT", base+"/agents/a", "", stale)
	if code != 409 || status["reason"] != string(metav1.StatusReasonConflict) {
		t.Fatalf("stale update: %d %v", code, status)
	}
	code, _ = e.do("PATCH", base+"/agents/a", "application/merge-patch+json", fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"spec":{"model":"m3"}}`, rv))
	if code != 409 {
		t.Fatalf("stale patch: %d", code)
	}
	if e.store.CurrentRV() != before {
		t.Fatal("conflicting writes changed the store")
	}
}

func TestDeleteTwiceAndFinalizers(t *testing.T) {
	e := newEnv(t)
	e.do("POST", base+"/grants", "", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"g","finalizers":["aicli.dev/test"]},"spec":{"subject":"a"}}`)
	code, obj := e.do("DELETE", base+"/grants/g", "", "")
	if code != 200 || meta(obj, "deletionTimestamp") == nil {
		t.Fatalf("delete with finalizer: %d %v", code, obj)
	}
	rv := e.store.CurrentRV()
	code, _ = e.do("DELETE", base+"/grants/g", "", "")
	if code != 200 || e.store.CurrentRV() != rv {
		t.Fatalf("second delete while terminating: %d, rv %d→%d", code, rv, e.store.CurrentRV())
	}
	code, _ = e.do("PATCH", base+"/grants/g", "application/merge-patch+json", `{"metadata":{"finalizers":null}}`)
	if code != 200 {
		t.Fatalf("finalizer removal: %d", code)
	}
	if code, _ = e.do("GET", base+"/grants/g", "", ""); code != 404 {
		t.Fatalf("object survived finalizer removal: %d", code)
	}
	code, status := e.do("DELETE", base+"/grants/g", "", "")
	if code != 404 || status["reason"] != string(metav1.StatusReasonNotFound) {
		t.Fatalf("delete twice: %d %v", code, status)
	}
}

func TestOneLiveConversationPerAgent(t *testing.T) {
	e := newEnv(t)
	conv := func(name, state string) string {
		return fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Conversation","metadata":{"name":%q},"spec":{"agentRef":"a","desiredState":%q}}`, name, state)
	}
	if code, _ := e.do("POST", base+"/conversations", "", conv("c1", "Active")); code != 201 {
		t.Fatal("first conversation refused")
	}
	code, status := e.do("POST", base+"/conversations", "", conv("c2", "Active"))
	if code != 409 || !strings.Contains(status["message"].(string), `"c1"`) {
		t.Fatalf("second live conversation: %d %v", code, status)
	}
	if code, _ := e.do("POST", base+"/conversations", "", conv("c3", "Paused")); code != 201 {
		t.Fatal("paused conversation refused")
	}
	code, status = e.do("PATCH", base+"/conversations/c3", "application/merge-patch+json", `{"spec":{"agentRef":"b"}}`)
	if code != 422 || !strings.Contains(status["message"].(string), "spec.agentRef") {
		t.Fatalf("agentRef change: %d %v", code, status)
	}
}

func TestListSelectorDryRunAndHistory(t *testing.T) {
	e := newEnv(t)
	e.do("POST", base+"/agents", "", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a","labels":{"team":"x"}},"spec":{"harness":"fake"}}`)
	e.do("POST", base+"/agents", "", agentJSON("b", ""))
	_, list := e.do("GET", base+"/agents?labelSelector=team%3Dx", "", "")
	if items := list["items"].([]any); len(items) != 1 || list["kind"] != "AgentList" {
		t.Fatalf("selector list: %v", list)
	}
	if code, _ := e.do("GET", base+"/agents?labelSelector=team%3D%3D%3Dx", "", ""); code != 400 {
		t.Fatal("bad selector accepted")
	}
	rv := e.store.CurrentRV()
	code, obj := e.do("POST", base+"/agents?dryRun=All", "", agentJSON("c", ""))
	if code != 200 || e.store.CurrentRV() != rv {
		t.Fatalf("dry run stored: %d", code)
	}
	if obj["spec"].(map[string]any)["resources"] == nil {
		t.Fatal("dry run did not default")
	}
	e.do("PATCH", base+"/agents/b", "application/merge-patch+json", `{"spec":{"model":"m"}}`)
	_, hist := e.do("GET", base+"/agents/b/history", "", "")
	items := hist["items"].([]any)
	if len(items) != 2 || items[0].(map[string]any)["type"] != "ADDED" {
		t.Fatalf("history: %v", hist)
	}
	_, all := e.do("GET", apischema.APIPath+"/agents", "", "")
	if len(all["items"].([]any)) != 2 {
		t.Fatalf("all-namespace list: %v", all)
	}
}

func TestWatchStreamsAndTooOld(t *testing.T) {
	e := newEnv(t)
	e.do("POST", base+"/agents", "", agentJSON("a", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+base+"/agents?watch=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	next := func() map[string]any {
		if !sc.Scan() {
			t.Fatalf("watch ended: %v", sc.Err())
		}
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	if ev := next(); ev["type"] != "ADDED" {
		t.Fatalf("initial event: %v", ev)
	}
	e.do("POST", base+"/agents", "", agentJSON("b", ""))
	if ev := next(); ev["type"] != "ADDED" || meta(ev["object"].(map[string]any), "name") != "b" {
		t.Fatalf("live event: %v", ev)
	}
	e.do("DELETE", base+"/agents/b", "", "")
	if ev := next(); ev["type"] != "DELETED" {
		t.Fatalf("delete event: %v", ev)
	}

	for i := range 5 {
		e.do("POST", base+"/agents", "", agentJSON(fmt.Sprintf("n%d", i), ""))
	}
	if err := e.store.Compact(context.Background(), e.store.CurrentRV()); err != nil {
		t.Fatal(err)
	}
	code, status := e.do("GET", base+"/agents?watch=true&resourceVersion=2", "", "")
	if code != 410 || !strings.Contains(status["message"].(string), "too old") {
		t.Fatalf("compacted watch: %d %v", code, status)
	}
	list, _ := e.store.List(context.Background(), "agents", "default", labels.Everything())
	if len(list.Items) != 6 {
		t.Fatalf("objects: %d", len(list.Items))
	}
}

func TestDiscovery(t *testing.T) {
	e := newEnv(t)
	code, body := e.do("GET", apischema.APIPath, "", "")
	if code != 200 {
		t.Fatal(code)
	}
	raw, _ := json.Marshal(body)
	for _, want := range []string{`"agents"`, `"conversations"`, `"grants"`, `"monitorattachments"`, `"conversations/status"`} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("discovery lacks %s", want)
		}
	}
}
