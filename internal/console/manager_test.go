package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"

	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/console/fleet"
	"aicli.dev/aicli/internal/console/state"
	"aicli.dev/aicli/internal/supinfo"
)

// managerEnv is a console over supervisor "a" (a real API server over a
// store, with the info endpoint) and supervisor "b" (nobody listens: down).
type managerEnv struct {
	api *apiservertest.Server
	cl  *client.Client
	con *testConsole
}

func newManagerEnv(t *testing.T) *managerEnv {
	t.Helper()
	api := apiservertest.New(t)
	supinfo.New(supinfo.Options{SupervisorID: "sup-a", Started: time.Now().Add(-time.Hour), Store: api.Store}).Mount(api.API)
	// The supervisor serves /readyz beside the API; the console's health check asks it.
	api.API.Handle("GET /readyz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	addr := api.ServeUnix(t)
	con := newTestConsole(t, state.Supervisor{Name: "a", Server: addr},
		state.Supervisor{Name: "b", Server: "unix://" + filepath.Join(t.TempDir(), "none.sock")})
	con.srv.Fleet.CheckAll(context.Background())
	cl, err := client.New(client.Config{Server: addr})
	if err != nil {
		t.Fatal(err)
	}
	return &managerEnv{api: api, cl: cl, con: con}
}

// get requests path as the logged-in user and returns the status and body.
func (e *managerEnv) get(t *testing.T, path string) (int, string) {
	t.Helper()
	return e.con.get(path)
}

func (e *managerEnv) create(t *testing.T, js string) {
	t.Helper()
	var obj unstructured.Unstructured
	if err := obj.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cl.Create(context.Background(), &obj, client.WriteOptions{}); err != nil {
		t.Fatalf("create %s: %v", obj.GetName(), err)
	}
}

func (e *managerEnv) agent(t *testing.T, name string) {
	e.create(t, fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":%q,"namespace":"default"},"spec":{"harness":"fake"}}`, name))
}

func (e *managerEnv) conversation(t *testing.T, name, agent, state, execution string, conds ...map[string]any) {
	t.Helper()
	e.create(t, fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Conversation","metadata":{"name":%q,"namespace":"default"},"spec":{"agentRef":%q}}`, name, agent))
	e.api.Mutate(t, "conversations", "default", name, func(u *unstructured.Unstructured) {
		status := map[string]any{"state": state, "execution": execution, "spendUSD": "1.25", "observedGeneration": u.GetGeneration()}
		if len(conds) > 0 {
			var cs []any
			for _, c := range conds {
				c["lastTransitionTime"] = "2026-01-01T00:00:00Z"
				cs = append(cs, c)
			}
			status["conditions"] = cs
		}
		u.Object["status"] = status
	})
}

// rowOf returns the table row of a conversation (data-conversation=name).
func rowOf(body, name string) string {
	m := regexp.MustCompile(`(?s)<tr[^>]*data-conversation="` + regexp.QuoteMeta(name) + `".*?</tr>`).FindString(body)
	return m
}

func TestFleetPage(t *testing.T) {
	e := newManagerEnv(t)
	e.agent(t, "coder")
	e.agent(t, "reviewer")
	e.agent(t, "lonely")
	e.conversation(t, "coder-1", "coder", "Active", "BUSY")
	e.conversation(t, "reviewer-1", "reviewer", "Paused", "")
	// A monitor watching coder (stored directly: only its target matters here).
	if _, err := e.api.Store.Create(context.Background(), "monitorattachments", &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "aicli.dev/v1alpha1", "kind": "MonitorAttachment",
		"metadata": map[string]any{"name": "guard", "namespace": "default"},
		"spec": map[string]any{"monitor": "reviewer", "mode": "Advise", "target": map[string]any{"agent": "coder"},
			"trigger": map[string]any{"keywords": []any{map[string]any{"text": "x"}}}}}}); err != nil {
		t.Fatal(err)
	}

	code, body := e.get(t, "/manage")
	if code != http.StatusOK {
		t.Fatalf("GET /manage: %d\n%s", code, body)
	}
	for _, want := range []string{
		`data-supervisor="b"`, `<span class="down">down</span>`, // b is down, in the supervisors and in the table
		"<td>" + duration.HumanDuration(time.Hour) + "</td>", // a's uptime from its info endpoint
		`href="/manage/conversations/a/default/coder-1"`,
		`data-watch-ws="/ws/watch?resource=conversations"`, `hx-get="/manage/fleet/table?"`,
		`<span class="hint">no conversation</span>`, // lonely
	} {
		if !strings.Contains(body, want) {
			t.Errorf("fleet page lacks %q", want)
		}
	}
	if r := rowOf(body, "coder-1"); !strings.Contains(r, "Active") || !strings.Contains(r, `state-BUSY`) || !strings.Contains(r, "$1.25") ||
		!strings.Contains(r, `watched by reviewer`) {
		t.Errorf("coder-1's row = %q, want Active, BUSY, its spend and the monitor watching it", r)
	}
	if r := rowOf(body, "reviewer-1"); !strings.Contains(r, "Paused") || strings.Contains(r, "BUSY") {
		t.Errorf("reviewer-1's row = %q, want Paused without an execution", r)
	}

	// The supervisors' rows alone (refreshed on health changes).
	if code, body := e.get(t, "/manage/fleet/supervisors"); code != http.StatusOK || strings.Contains(body, "<html") ||
		!strings.Contains(body, `id="fleet-supervisors"`) || !strings.Contains(body, `<span class="down">down</span>`) {
		t.Errorf("supervisors partial: %d %s", code, body)
	}

	// Filters: the GET form's fields, also on the partial.
	for _, tc := range []struct {
		query      string
		want, lack []string
	}{
		{"state=paused", []string{"reviewer-1"}, []string{"coder-1", "lonely"}},
		{"execution=BUSY", []string{"coder-1"}, []string{"reviewer-1", "lonely"}},
		{"agent=REV", []string{"reviewer-1"}, []string{"coder-1", "lonely"}},
		{"state=none", []string{"lonely"}, []string{"coder-1", "reviewer-1"}},
		{"supervisor=b", []string{"down"}, []string{"coder-1"}},
	} {
		_, body := e.get(t, "/manage/fleet/table?"+tc.query)
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: table lacks %q", tc.query, w)
			}
		}
		for _, l := range tc.lack {
			if strings.Contains(body, ">"+l+"<") {
				t.Errorf("%s: table shows %q", tc.query, l)
			}
		}
		if strings.Contains(body, "<html") {
			t.Errorf("%s: the partial is a whole page", tc.query)
		}
	}
}

func TestFleetTablePages(t *testing.T) {
	sup := &fleet.Supervisor{Name: "a"}
	var sn fleetSnapshot
	sn.Supervisor = sup
	for i := range 450 {
		var a unstructured.Unstructured
		a.SetNamespace("default")
		a.SetName(fmt.Sprintf("agent-%03d", i))
		sn.Agents = append(sn.Agents, a)
	}
	now := time.Now()
	t0 := buildFleetTable([]fleetSnapshot{sn}, fleetFilter{Agent: "agent"}, now, nil)
	if t0.Total != 450 || len(t0.Rows) != fleetPageRows || t0.Prev != "" || t0.Next != "agent=agent&page=1" {
		t.Fatalf("page 0: total %d rows %d prev %q next %q", t0.Total, len(t0.Rows), t0.Prev, t0.Next)
	}
	t2 := buildFleetTable([]fleetSnapshot{sn}, fleetFilter{Agent: "agent", Page: 2}, now, nil)
	if len(t2.Rows) != 50 || t2.First != 401 || t2.Next != "" || t2.Prev != "agent=agent&page=1" || t2.Rows[0].Agent != "agent-400" {
		t.Fatalf("page 2: rows %d first %d next %q prev %q", len(t2.Rows), t2.First, t2.Next, t2.Prev)
	}
}

func TestStatusPageFailingFirst(t *testing.T) {
	e := newManagerEnv(t)
	e.agent(t, "coder")
	e.agent(t, "coder2")
	e.agent(t, "coder3")
	e.conversation(t, "aaa-ok", "coder", "Paused", "",
		map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded", "message": "all dependencies are ready"},
		map[string]any{"type": "ContainerRunning", "status": "False", "reason": "Paused", "message": "no container"})
	e.conversation(t, "zzz-bad", "coder2", "Active", "IDLE",
		map[string]any{"type": "Ready", "status": "False", "reason": "ContainerFailed", "message": "the container <exited>"})
	e.conversation(t, "yyy-stalled", "coder3", "Active", "IDLE",
		map[string]any{"type": "Stalled", "status": "True", "reason": "BadSpec", "message": "fix it"})

	code, body := e.get(t, "/manage/status")
	if code != http.StatusOK {
		t.Fatalf("GET /manage/status: %d\n%s", code, body)
	}
	names := regexp.MustCompile(`data-name="([^"]+)"`).FindAllStringSubmatch(body, -1)
	var order []string
	for _, n := range names {
		order = append(order, n[1])
	}
	// The agents never reconciled (observedGeneration 0 < generation 1): failing too.
	if want := "[yyy-stalled coder coder2 coder3 zzz-bad aaa-ok]"; fmt.Sprint(order) != want {
		t.Fatalf("rows in order %v, want %s: stalled, then failing, then the rest", order, want)
	}
	for _, want := range []string{"ContainerFailed", "the container &lt;exited&gt;", `<span class="cond-False">Stalled=True</span>`, `href="/manage/describe/a/conversations/default/zzz-bad"`,
		`data-supervisor="b"`, "is down"} {
		if !strings.Contains(body, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	_, body = e.get(t, "/manage/status/table?failing=1")
	if strings.Contains(body, `data-name="aaa-ok"`) || !strings.Contains(body, `data-name="zzz-bad"`) {
		t.Errorf("failing only: %s", body)
	}
}

func TestDescribePage(t *testing.T) {
	e := newManagerEnv(t)
	e.agent(t, "coder")
	e.conversation(t, "coder-1", "coder", "Active", "IDLE",
		map[string]any{"type": "Ready", "status": "False", "reason": "Starting", "message": "pulling"})
	code, body := e.get(t, "/manage/describe/a/conversations/default/coder-1")
	if code != http.StatusOK {
		t.Fatalf("describe: %d\n%s", code, body)
	}
	for _, want := range []string{"agentRef: coder", "Starting", "pulling", "ADDED", "created (generation 1)", "STATUS",
		`href="/manage/conversations/a/default/coder-1"`} {
		if !strings.Contains(body, want) {
			t.Errorf("describe lacks %q", want)
		}
	}
	// A missing object and an unknown supervisor are readable errors.
	if code, body := e.get(t, "/manage/describe/a/conversations/default/nope"); code != http.StatusNotFound || !strings.Contains(body, "nope") {
		t.Errorf("missing object: %d %s", code, body)
	}
	if code, body := e.get(t, "/manage/describe/zz/agents/default/coder"); code != http.StatusNotFound || !strings.Contains(body, "no supervisor named") {
		t.Errorf("unknown supervisor: %d %s", code, body)
	}
}
