package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/console/fleet"
	"aicli.dev/aicli/internal/convapi/convapitest"
)

func TestPlacementOrder(t *testing.T) {
	a, b, c, d := &fleet.Supervisor{Name: "a"}, &fleet.Supervisor{Name: "b"}, &fleet.Supervisor{Name: "c"}, &fleet.Supervisor{Name: "d"}
	names := func(sups []*fleet.Supervisor) string {
		var out []string
		for _, s := range sups {
			out = append(out, s.Name)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name  string
		cands []candidate
		want  string
	}{
		{"fewest live conversations first", []candidate{{a, true, 5}, {b, true, 1}, {c, true, 3}}, "b,c,a"},
		{"ties keep the configured order", []candidate{{a, true, 2}, {b, true, 2}, {c, true, 0}}, "c,a,b"},
		{"down supervisors are skipped", []candidate{{a, false, 0}, {b, true, 9}}, "b"},
		{"uncounted supervisors are skipped", []candidate{{a, true, -1}, {b, true, 4}, {d, true, 4}}, "b,d"},
		{"none healthy", []candidate{{a, false, 0}, {b, false, -1}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(placementOrder(tc.cands)); got != tc.want {
				t.Fatalf("order %q, want %q", got, tc.want)
			}
		})
	}
}

// setCondition writes a condition of conversation ns/name for its current
// generation, as the conversation controller does.
func setCondition(t *testing.T, env *convapitest.Env, ns, name, typ, status, reason string) {
	t.Helper()
	env.Server.Mutate(t, "conversations", ns, name, func(o *unstructured.Unstructured) {
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		conds = append(conds, map[string]any{"type": typ, "status": status, "reason": reason, "message": reason,
			"observedGeneration": o.GetGeneration(), "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)})
		_ = unstructured.SetNestedSlice(o.Object, conds, "status", "conditions")
		_ = unstructured.SetNestedField(o.Object, "Active", "status", "state")
	})
}

// launcher plays the conversation controller for agent on env: each new
// conversation becomes live (ok) or stalls.
func launcher(t *testing.T, ctx context.Context, env *convapitest.Env, agent string, ok bool) {
	done := map[string]bool{}
	go func() {
		for ctx.Err() == nil {
			for _, c := range env.Conversations(t, "default", agent) {
				if done[c] {
					continue
				}
				done[c] = true
				if ok {
					env.SetReady(t, "default", c, "True", "Live", "")
					_ = env.Live(t, "default", c)
				} else {
					setCondition(t, env, "default", c, v1alpha1.ConditionStalled, "True", "ImageBuildFailed")
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
}

func TestCreateAgentIsPlacedAndRetriedOnAnotherSupervisor(t *testing.T) {
	busy, idle := convapitest.Start(t), convapitest.Start(t)
	// busy runs two live conversations, idle none: idle is tried first.
	busy.CreateAgent(t, "default", "old")
	for _, c := range []string{"o1", "o2"} {
		busy.CreateConversation(t, "default", c, "old", v1alpha1.ConversationPaused)
		busy.Server.Mutate(t, "conversations", "default", c, func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, "Active", "status", "state")
		})
	}
	h := startConsoleOn(t, []*convapitest.Env{busy, idle}, "busy", "idle")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	launcher(t, ctx, idle, "helper", false) // its first launch stalls on idle…
	launcher(t, ctx, busy, "helper", true)  // …and succeeds on busy.

	form := url.Values{"_csrf": {h.csrf}, "name": {"helper"}, "harness": {"fake"}, "model": {"m1"}, "persona": {"Be brief."}}
	resp, err := (&http.Client{Jar: h.hc.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).
		PostForm(h.srv.URL+"/agents/new", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/talk/busy/default/helper" {
		t.Fatalf("create: HTTP %d to %q, want the chat view on busy", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, err := idle.Store.Get(context.Background(), "agents", "default", "helper"); err == nil {
		t.Error("the agent of the failed launch is still on idle")
	}
	obj := busy.Server.Object(t, "agents", "default", "helper")
	if m, _, _ := unstructured.NestedString(obj.Object, "spec", "model"); m != "m1" {
		t.Errorf("model %q", m)
	}
	if p, _, _ := unstructured.NestedString(obj.Object, "spec", "persona"); p != "Be brief." {
		t.Errorf("persona %q", p)
	}
}

func TestCreateAgentShowsReadableErrors(t *testing.T) {
	h := startConvHarness(t)
	h.env.CreateAgent(t, "default", "taken")
	for _, tc := range []struct {
		form url.Values
		code int
		want string
	}{
		{url.Values{"name": {""}, "harness": {"fake"}}, http.StatusBadRequest, "give the agent a name"},
		{url.Values{"name": {"Bad_Name"}, "harness": {"fake"}}, http.StatusBadRequest, "is not a valid name"},
		{url.Values{"name": {"ok"}, "harness": {"vim"}}, http.StatusBadRequest, "choose one of the listed CLIs"},
		{url.Values{"name": {"taken"}, "harness": {"fake"}}, http.StatusConflict, "already have an agent named taken"},
		// The supervisor's own validation, as a dry run: nothing is created.
		{url.Values{"name": {"long-model"}, "harness": {"fake"}, "model": {strings.Repeat("m", 300)}}, http.StatusUnprocessableEntity, "model"},
	} {
		tc.form.Set("_csrf", h.csrf)
		resp, err := h.hc.PostForm(h.srv.URL+"/agents/new", tc.form)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(resp)
		if resp.StatusCode != tc.code || !strings.Contains(body, tc.want) || !strings.Contains(body, `role="alert"`) {
			t.Errorf("%v: HTTP %d, want %d with %q in the form: %s", tc.form, resp.StatusCode, tc.code, tc.want, excerpt(body, "error"))
		}
		if !strings.Contains(body, `value="`+tc.form.Get("name")+`"`) {
			t.Errorf("%v: the form lost the name", tc.form)
		}
	}
	if _, err := h.env.Store.Get(context.Background(), "agents", "default", "long-model"); err == nil {
		t.Error("an invalid agent was created")
	}
}

func TestNewAgentFormOffersDeclaredTools(t *testing.T) {
	h := startConvHarness(t)
	h.env.CreateAgent(t, "default", "admin")
	for _, c := range []string{
		`{"apiVersion":"aicli.dev/v1alpha1","kind":"ToolClass","metadata":{"name":"greet"},"spec":{"usage":"greet NAME",` +
			`"backend":{"exec":{"command":"/bin/echo"}}}}`,
		`{"apiVersion":"aicli.dev/v1alpha1","kind":"ToolClass","metadata":{"name":"elsewhere"},"spec":{"usage":"not here",` +
			`"namespaces":["team-b"],"backend":{"exec":{"command":"/bin/echo"}}}}`,
	} {
		if code, body := h.env.Do(t, http.MethodPost, "/apis/aicli.dev/v1alpha1/toolclasses", "application/json", []byte(c)); code != http.StatusCreated {
			t.Fatalf("toolclass: HTTP %d: %s", code, body)
		}
	}
	_, body := h.get(t, "/agents/new")
	for _, want := range []string{`<label for="name">Name</label>`, `<label for="harness">CLI</label>`, `value="fake"`, `value="claude"`,
		`name="tool" type="checkbox" value="greet"`, "greet NAME"} {
		if !strings.Contains(body, want) {
			t.Errorf("the form lacks %q", want)
		}
	}
	if strings.Contains(body, `value="elsewhere"`) {
		t.Error("the form offers a ToolClass that does not admit the console's namespace")
	}
	// Creating with the tool creates a Grant of it for the new agent.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	launcher(t, ctx, h.env, "helper", true)
	resp, err := h.hc.PostForm(h.srv.URL+"/agents/new", url.Values{"_csrf": {h.csrf}, "name": {"helper"}, "harness": {"fake"}, "tool": {"greet"}})
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, "data-transcript-ws") {
		t.Fatalf("create with a tool: HTTP %d: %s", resp.StatusCode, excerpt(body, "error"))
	}
	g := h.env.Server.Object(t, "grants", "default", "helper-tools")
	if s, _, _ := unstructured.NestedString(g.Object, "spec", "subject"); s != "helper" {
		t.Fatalf("grant subject %q", s)
	}
	if tools, _, _ := unstructured.NestedSlice(g.Object, "spec", "tools"); len(tools) != 1 || tools[0].(map[string]any)["className"] != "greet" {
		t.Fatalf("grant tools %v, want one of class greet", tools)
	}
}

func TestMyAgentsShowsStateAndUnreadMail(t *testing.T) {
	h := startConvHarness(t)
	h.env.CreateAgent(t, "default", "alpha")
	h.env.CreateAgent(t, "default", "beta")
	h.env.CreateConversation(t, "default", "a1", "alpha", v1alpha1.ConversationActive)
	h.env.Server.Mutate(t, "conversations", "default", "a1", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, "Active", "status", "state")
		_ = unstructured.SetNestedField(o.Object, "BUSY", "status", "execution")
	})
	h.env.Server.Mutate(t, "agents", "default", "alpha", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, "a1", "status", "liveConversation")
		_ = unstructured.SetNestedField(o.Object, int64(3), "status", "inboxUnread")
	})
	code, body := h.get(t, "/")
	if code != http.StatusOK {
		t.Fatalf("home: HTTP %d", code)
	}
	alpha := excerpt(body, `data-agent="alpha"`)
	for _, want := range []string{`data-execution="BUSY"`, "3 unread", `href="/talk/s1/default/alpha"`} {
		if !strings.Contains(alpha, want) {
			t.Errorf("alpha's row lacks %q: %s", want, alpha)
		}
	}
	if beta := excerpt(body, `data-agent="beta"`); !strings.Contains(beta, "not started") {
		t.Errorf("beta's row: %s", beta)
	}
	if strings.Contains(body, ">s1<") {
		t.Error("my agents names the supervisor")
	}
	_, settings := h.get(t, "/settings")
	if !strings.Contains(settings, "s1") || !strings.Contains(settings, `<span class="up">up</span>`) {
		t.Error("settings do not list the supervisor and its health")
	}
	// An alias renames the agent in the end-user console.
	resp, err := h.hc.PostForm(h.srv.URL+"/settings/alias", url.Values{"_csrf": {h.csrf}, "supervisor": {"s1"}, "namespace": {"default"},
		"agent": {"alpha"}, "alias": {"Research helper"}})
	if err != nil {
		t.Fatal(err)
	}
	readAll(resp)
	if _, body = h.get(t, "/agents/table"); !strings.Contains(body, "Research helper") {
		t.Error("the alias is not shown")
	}
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// excerpt is the text around the first occurrence of marker (for messages).
func excerpt(body, marker string) string {
	i := strings.Index(body, marker)
	if i < 0 {
		return "(no " + marker + ")"
	}
	end := min(len(body), i+600)
	return body[i:end]
}

func TestASupervisorThatIsDownLeavesTheOthersWorking(t *testing.T) {
	up, down := convapitest.Start(t), convapitest.Start(t)
	h := startConsoleOn(t, []*convapitest.Env{down, up}, "down", "up")
	up.CreateAgent(t, "default", "alive")
	down.CreateAgent(t, "default", "gone")
	h.fronts[0].Close()
	h.fleet.CheckAll(context.Background())

	code, body := h.get(t, "/")
	if code != http.StatusOK || !strings.Contains(body, `data-agent="alive"`) || !strings.Contains(body, "a supervisor does not answer") {
		t.Fatalf("home with a supervisor down: HTTP %d: %s", code, excerpt(body, "<main"))
	}
	// A new agent goes to the one that is up.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	launcher(t, ctx, up, "fresh", true)
	resp, err := h.hc.PostForm(h.srv.URL+"/agents/new", url.Values{"_csrf": {h.csrf}, "name": {"fresh"}, "harness": {"fake"}})
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, "data-transcript-ws") {
		t.Fatalf("create with a supervisor down: HTTP %d: %s", resp.StatusCode, excerpt(body, "error"))
	}
	up.Server.Object(t, "agents", "default", "fresh")
	// Talking to an agent of the supervisor that is down says so, readably.
	code, body = h.get(t, "/talk/down/default/gone")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "gone cannot be reached right now") {
		t.Fatalf("talk on a supervisor that is down: HTTP %d: %s", code, excerpt(body, "<main"))
	}
}
