package console

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/console/auth"
	"aicli.dev/aicli/internal/console/fleet"
	"aicli.dev/aicli/internal/console/state"
	"aicli.dev/aicli/internal/monitor/monitorapi"
	"aicli.dev/aicli/internal/storeclient"
)

// testConsole is a console over real API servers, with a logged-in HTTP client.
type testConsole struct {
	t    testing.TB
	srv  *Server
	url  string
	hc   *http.Client
	csrf string
	// arrived counts the requests the console received.
	arrived atomic.Int64
}

const testPassword = "console-test-password"

// newTestConsole serves a console over the supervisors (name=address).
func newTestConsole(t testing.TB, sups ...state.Supervisor) *testConsole {
	t.Helper()
	st, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.New(sups)
	if err != nil {
		t.Fatal(err)
	}
	a := &auth.Auth{State: st}
	if _, err := a.EnsurePassword(testPassword); err != nil {
		t.Fatal(err)
	}
	srv := &Server{Fleet: f, Auth: a, State: st}
	h, err := srv.Handler()
	if err != nil {
		t.Fatal(err)
	}
	c := &testConsole{t: t, srv: srv}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.arrived.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	sess, err := a.Login(netip.IPv6Loopback(), testPassword)
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(hs.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: auth.SessionCookie, Value: sess.ID, Path: "/"}})
	hc := &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	c.url, c.hc, c.csrf = hs.URL, hc, sess.CSRF
	return c
}

// get fetches path and returns the status and body.
func (c *testConsole) get(path string, header ...string) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.url+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return c.do(req)
}

// post submits form values with the session's CSRF token.
func (c *testConsole) post(path string, form url.Values, header ...string) (int, string, http.Header) {
	c.t.Helper()
	form.Set(auth.CSRFField, c.csrf)
	req, _ := http.NewRequest(http.MethodPost, c.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

func (c *testConsole) do(req *http.Request) (int, string) {
	c.t.Helper()
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// monitorSupervisor is an API server with the monitor endpoints and agents
// "coder" (codex, model gpt-5-codex) and "helper" (claude) in namespace default.
func monitorSupervisor(t *testing.T) (*apiservertest.Server, string) {
	t.Helper()
	srv := apiservertest.New(t)
	monitorapi.Mount(srv.API, srv.Store)
	addr := srv.ServeUnix(t)
	c := storeclient.New(srv.Store)
	for name, spec := range map[string]v1alpha1.AgentSpec{"coder": {Harness: "codex", Model: "gpt-5-codex"}, "helper": {Harness: "claude"}} {
		a := &v1alpha1.Agent{Spec: spec}
		a.Namespace, a.Name = "default", name
		if err := c.Create(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	return srv, addr
}

func attach(t *testing.T, srv *apiservertest.Server, name, target string, keywords ...v1alpha1.Keyword) {
	t.Helper()
	a := &v1alpha1.MonitorAttachment{Spec: v1alpha1.MonitorAttachmentSpec{Monitor: "helper",
		Target: v1alpha1.MonitorTarget{Agent: target}, Trigger: v1alpha1.TriggerSpec{Keywords: keywords}}}
	a.Namespace, a.Name = "default", name
	if err := storeclient.New(srv.Store).Create(context.Background(), a); err != nil {
		t.Fatal(err)
	}
}

// trip writes a tripped breaker into the attachment's status, as the monitor
// service does.
func trip(t *testing.T, srv *apiservertest.Server, name, reason string) {
	t.Helper()
	srv.Mutate(t, "monitorattachments", "default", name, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, metav1.Now().UTC().Format(time.RFC3339), "status", "trippedAt")
		_ = unstructured.SetNestedField(u.Object, reason, "status", "trippedReason")
		_ = unstructured.SetNestedField(u.Object, int64(5), "status", "consecutiveHumanless")
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"target": "coder-abc12", "monitor": "helper-xyz34", "cursor": int64(41)}},
			"status", "conversations")
	})
}

func mustContain(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Fatalf("%s: want %q in:\n%s", what, w, body)
		}
	}
}

func mustNotContain(t *testing.T, what, body string, nots ...string) {
	t.Helper()
	for _, w := range nots {
		if strings.Contains(body, w) {
			t.Fatalf("%s: do not want %q in:\n%s", what, w, body)
		}
	}
}

func TestMonitorsPageListsAttachmentsAndLinksConversations(t *testing.T) {
	srv, addr := monitorSupervisor(t)
	attach(t, srv, "watchdog", "coder", v1alpha1.Keyword{Text: "panic"}, v1alpha1.Keyword{Text: "err", Mode: v1alpha1.MatchWord},
		v1alpha1.Keyword{Text: "<script>alert(1)</script>"})
	trip(t, srv, "watchdog", "5 wake→advise cycles without a human message")
	c := newTestConsole(t, state.Supervisor{Name: "alpha", Server: addr})

	code, body := c.get("/manage/monitors")
	if code != http.StatusOK {
		t.Fatalf("monitors page: %d %s", code, body)
	}
	mustContain(t, "monitors page", body, `id="ma-alpha-default-watchdog"`, ">watchdog<", "panic", "err (word)", "Advise",
		"Tripped", "5/5 cycles without a human", "0/20 wakes per 60 min",
		`href="/manage/conversations/alpha/default/coder-abc12"`, `href="/manage/conversations/alpha/default/helper-xyz34"`,
		`href="/manage/describe/alpha/monitorattachments/default/watchdog"`,
		`data-watch-ws="/ws/watch?resource=monitorattachments"`, "&lt;script&gt;alert(1)&lt;/script&gt;")
	mustNotContain(t, "monitors page", body, "<script>alert(1)")

	code, table := c.get("/manage/monitors/table", "HX-Request", "true")
	if code != http.StatusOK || strings.Contains(table, "<html") {
		t.Fatalf("table partial: %d %s", code, table)
	}
	mustContain(t, "table partial", table, `id="ma-alpha-default-watchdog"`)
}

func TestTrippedBreakerBannerOnEveryManagerPageAndRearm(t *testing.T) {
	srv, addr := monitorSupervisor(t)
	attach(t, srv, "watchdog", "coder", v1alpha1.Keyword{Text: "panic"})
	attach(t, srv, "quiet", "coder", v1alpha1.Keyword{Text: "deadlock"})
	c := newTestConsole(t, state.Supervisor{Name: "alpha", Server: addr})

	_, body := c.get("/manage")
	mustNotContain(t, "fleet page before the trip", body, "Breaker tripped")

	trip(t, srv, "watchdog", "5 wake→advise cycles without a human message")
	// The partial (asked for on a watch event) reads afresh; pages may serve the cache for a few seconds.
	code, partial := c.get("/manage/alerts", "HX-Request", "true")
	if code != http.StatusOK {
		t.Fatalf("alerts partial: %d %s", code, partial)
	}
	mustContain(t, "alerts partial", partial, "Breaker tripped", "watchdog", "without a human message", "Re-arm watchdog",
		`value="`+c.csrf+`"`)
	mustNotContain(t, "alerts partial", partial, "quiet")
	for _, p := range []string{"/manage", "/manage/monitors", "/manage/spend", "/manage/monitors/new"} {
		_, body := c.get(p)
		mustContain(t, p, body, `<div id="alerts"`, "Breaker tripped", "Re-arm watchdog")
	}
	_, user := c.get("/")
	mustNotContain(t, "end-user console", user, "Breaker tripped")

	// Without the CSRF token the re-arm is refused.
	req, _ := http.NewRequest(http.MethodPost, c.url+"/manage/monitors/rearm",
		strings.NewReader("supervisor=alpha&namespace=default&name=watchdog"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if code, _ := c.do(req); code != http.StatusForbidden {
		t.Fatalf("re-arm without CSRF: %d", code)
	}

	code, partial, _ = c.post("/manage/monitors/rearm", url.Values{"supervisor": {"alpha"}, "namespace": {"default"}, "name": {"watchdog"}},
		"HX-Request", "true")
	if code != http.StatusOK {
		t.Fatalf("re-arm: %d %s", code, partial)
	}
	mustNotContain(t, "alerts after re-arm", partial, "Breaker tripped")
	if tripped, _, _ := unstructured.NestedString(srv.Object(t, "monitorattachments", "default", "watchdog").Object, "status", "trippedAt"); tripped != "" {
		t.Fatalf("still tripped after re-arm: %s", tripped)
	}
	_, body = c.get("/manage")
	mustNotContain(t, "fleet page after re-arm", body, "Breaker tripped")

	// A plain form post is sent back to the monitors page; an unknown attachment is a readable error.
	code, _, h := c.post("/manage/monitors/rearm", url.Values{"supervisor": {"alpha"}, "namespace": {"default"}, "name": {"watchdog"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/manage/monitors#ma-alpha-default-watchdog") {
		t.Fatalf("plain re-arm: %d %v", code, h)
	}
	code, msg, _ := c.post("/manage/monitors/rearm", url.Values{"supervisor": {"alpha"}, "namespace": {"default"}, "name": {"nope"}},
		"HX-Request", "true")
	if code != http.StatusNotFound || !strings.Contains(msg, "nope") {
		t.Fatalf("re-arm of a missing attachment: %d %s", code, msg)
	}
}

func TestAttachMonitorForm(t *testing.T) {
	srv, addr := monitorSupervisor(t)
	c := newTestConsole(t, state.Supervisor{Name: "alpha", Server: addr})

	// Reached from the target: harness, model, name and the breaker's defaults are filled in.
	code, body := c.get("/manage/monitors/new?target=alpha/default/coder")
	if code != http.StatusOK {
		t.Fatalf("form: %d %s", code, body)
	}
	mustContain(t, "form", body, `<option value="alpha/default/coder" selected>`, `<option value="alpha/default/helper">`,
		`<option value="codex" selected>`, `value="gpt-5-codex"`, `value="coder-monitor"`, `id="maxHumanless" name="maxHumanless" value="5"`,
		`name="wakes" value="20"`, `name="windowMinutes" value="60"`, `<label for="keywords">`)

	// Bad input is shown next to its field, the values kept.
	code, body, _ = c.post("/manage/monitors", url.Values{"target": {"alpha/default/coder"}, "name": {"Bad Name"},
		"keywords": {" "}, "maxHumanless": {"0"}, "wakes": {"20"}, "windowMinutes": {"60"}})
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("bad form: %d %s", code, body)
	}
	mustContain(t, "bad form", body, `id="name-error"`, `id="keywords-error"`, "give at least one keyword", `id="maxHumanless-error"`,
		"a whole number from 1 to 1000", `value="Bad Name"`)
	// A blank keyword among others is refused by client.CreateMonitor before anything is created.
	code, body, _ = c.post("/manage/monitors", url.Values{"target": {"alpha/default/coder"}, "name": {"watchdog"},
		"keywords": {"panic, ,deadlock"}, "maxHumanless": {"5"}, "wakes": {"20"}, "windowMinutes": {"60"}})
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("blank keyword: %d %s", code, body)
	}
	mustContain(t, "blank keyword", body, `id="keywords-error"`, "empty keyword")
	// A duplicate keyword is refused by the server's dry run, nothing left behind.
	code, body, _ = c.post("/manage/monitors", url.Values{"target": {"alpha/default/coder"}, "name": {"watchdog"},
		"keywords": {"panic,PANIC"}, "maxHumanless": {"5"}, "wakes": {"20"}, "windowMinutes": {"60"}})
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("duplicate keyword: %d %s", code, body)
	}
	mustContain(t, "duplicate keyword", body, `id="keywords-error"`, "spec.trigger.keywords")
	if _, err := srv.Store.Get(context.Background(), "agents", "default", "watchdog"); err == nil {
		t.Fatal("a refused monitor left its agent behind")
	}

	// One submit creates the agent and the attachment.
	code, body, h := c.post("/manage/monitors", url.Values{"target": {"alpha/default/coder"}, "name": {"watchdog"},
		"keywords": {"panic, deadlock"}, "match": {"Word"}, "caseSensitive": {"1"}, "mode": {"WatchOnly"}, "harness": {"claude"},
		"model": {"claude-haiku-4-5"}, "maxHumanless": {"3"}, "wakes": {"7"}, "windowMinutes": {"30"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/manage/monitors?created=alpha%2Fdefault%2Fwatchdog") {
		t.Fatalf("create: %d %v %s", code, h, body)
	}
	sc := storeclient.New(srv.Store)
	agent, att := &v1alpha1.Agent{}, &v1alpha1.MonitorAttachment{}
	if err := sc.Get(context.Background(), "default", "watchdog", agent); err != nil {
		t.Fatal(err)
	}
	if err := sc.Get(context.Background(), "default", "watchdog", att); err != nil {
		t.Fatal(err)
	}
	if agent.Spec.Harness != "claude" || agent.Spec.Model != "claude-haiku-4-5" {
		t.Fatalf("monitor agent: %+v", agent.Spec)
	}
	s := att.Spec
	if s.Monitor != "watchdog" || s.Target.Agent != "coder" || s.Mode != v1alpha1.MonitorWatchOnly || !s.Trigger.CaseSensitive ||
		len(s.Trigger.Keywords) != 2 || s.Trigger.Keywords[1] != (v1alpha1.Keyword{Text: "deadlock", Mode: v1alpha1.MatchWord}) ||
		s.Breaker.MaxConsecutiveHumanless != 3 || s.Breaker.RateBackstop != (v1alpha1.RateBackstop{Wakes: 7, WindowMinutes: 30}) {
		t.Fatalf("attachment: %+v", s)
	}
	_, body = c.get(h.Get("Location"))
	mustContain(t, "monitors page after create", body, "Monitor <strong>alpha/default/watchdog</strong> created", `id="ma-alpha-default-watchdog"`)

	// The same name again: said next to the name field.
	code, body, _ = c.post("/manage/monitors", url.Values{"target": {"alpha/default/coder"}, "name": {"watchdog"},
		"keywords": {"x"}, "maxHumanless": {"5"}, "wakes": {"20"}, "windowMinutes": {"60"}})
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("second create: %d %s", code, body)
	}
	mustContain(t, "second create", body, `id="name-error"`, "already exists")
}

func TestWatchedByAndDownSupervisor(t *testing.T) {
	srv, addr := monitorSupervisor(t)
	attach(t, srv, "watchdog", "coder", v1alpha1.Keyword{Text: "panic"})
	c := newTestConsole(t, state.Supervisor{Name: "alpha", Server: addr},
		state.Supervisor{Name: "gone", Server: "unix:///nonexistent/supervisor.sock"})

	w := c.srv.WatchedBy(context.Background(), "alpha", "default", "coder")
	if len(w) != 1 || w[0].Name != "watchdog" || w[0].Monitor != "helper" || w[0].Link != "/manage/monitors#ma-alpha-default-watchdog" {
		t.Fatalf("watched by: %+v", w)
	}
	if w := c.srv.WatchedBy(context.Background(), "alpha", "default", "helper"); len(w) != 0 {
		t.Fatalf("helper is watched by nobody: %+v", w)
	}
	code, body := c.get("/manage/monitors")
	if code != http.StatusOK {
		t.Fatalf("monitors page with a supervisor down: %d %s", code, body)
	}
	mustContain(t, "monitors page with a supervisor down", body, "supervisor gone:", `id="ma-alpha-default-watchdog"`)
}

func TestWatchedByCrossSupervisor(t *testing.T) {
	alpha, alphaAddr := monitorSupervisor(t)
	_, betaAddr := monitorSupervisor(t)
	remote := &v1alpha1.MonitorAttachment{Spec: v1alpha1.MonitorAttachmentSpec{Monitor: "helper",
		Target:  v1alpha1.MonitorTarget{Agent: "coder", Supervisor: &v1alpha1.RemoteSupervisor{Address: betaAddr, TokenSecret: "beta-token"}},
		Trigger: v1alpha1.TriggerSpec{Keywords: []v1alpha1.Keyword{{Text: "panic"}}}}}
	remote.Namespace, remote.Name = "default", "over-there"
	if err := storeclient.New(alpha.Store).Create(context.Background(), remote); err != nil {
		t.Fatal(err)
	}
	c := newTestConsole(t, state.Supervisor{Name: "alpha", Server: alphaAddr}, state.Supervisor{Name: "beta", Server: betaAddr})
	if w := c.srv.WatchedBy(context.Background(), "alpha", "default", "coder"); len(w) != 0 {
		t.Fatalf("alpha's coder is not watched: %+v", w)
	}
	w := c.srv.WatchedBy(context.Background(), "beta", "default", "coder")
	if len(w) != 1 || w[0].Name != "over-there" || w[0].Link != "/manage/monitors#ma-alpha-default-over-there" {
		t.Fatalf("beta's coder is watched from alpha: %+v", w)
	}
	_, body := c.get("/manage/monitors")
	mustContain(t, "monitors page", body, "on "+betaAddr)
}

func TestAlertsShareListsAcrossPagesAndEvents(t *testing.T) {
	srv, addr := monitorSupervisor(t)
	attach(t, srv, "watchdog", "coder", v1alpha1.Keyword{Text: "panic"})
	c := newTestConsole(t, state.Supervisor{Name: "alpha", Server: addr})
	lists := func() int { return srv.Requests(http.MethodGet, "/apis/aicli.dev/v1alpha1/monitorattachments") }

	// Pages within attachmentsTTL share one list.
	before := lists()
	for range 5 {
		if code, body := c.get("/manage"); code != http.StatusOK {
			t.Fatalf("fleet page: %d %s", code, body)
		}
	}
	if n := lists() - before; n != 1 {
		t.Fatalf("5 page views made %d lists, want 1", n)
	}
	// Ten pages refreshing on one watch event at once share at most two lists:
	// the first list is held until all ten reached the console.
	before = lists()
	arrivedBefore := c.arrived.Load()
	srv.BeforeServe(func(r *http.Request) {
		if r.URL.Path != "/apis/aicli.dev/v1alpha1/monitorattachments" {
			return
		}
		for deadline := time.Now().Add(10 * time.Second); c.arrived.Load() < arrivedBefore+10 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	})
	done := make(chan int, 10)
	for range 10 {
		go func() { // c.get may not fail the test from here
			req, _ := http.NewRequest(http.MethodGet, c.url+"/manage/alerts", nil)
			req.Header.Set("HX-Request", "true")
			resp, err := c.hc.Do(req)
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
	}
	for range 10 {
		if code := <-done; code != http.StatusOK {
			t.Fatalf("alerts partial: %d", code)
		}
	}
	if n := lists() - before; n < 1 || n > 2 {
		t.Fatalf("10 simultaneous refreshes made %d lists, want 1 or 2", n)
	}
}
