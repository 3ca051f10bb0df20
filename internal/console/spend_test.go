package console

import (
	"encoding/json"
	"html"
	"net/http"
	"regexp"
	"testing"
	"time"

	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/console/state"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/spend/spendapi"
	"aicli.dev/aicli/internal/spend/spendtest"
)

// spendSupervisor is an API server with the spend endpoint over dataDir's
// agent homes, as the supervisor mounts it.
func spendSupervisor(t *testing.T, dataDir string) string {
	t.Helper()
	srv := apiservertest.New(t)
	svc, err := spendapi.NewService(spendapi.Config{DataDir: dataDir, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.API.Handle("GET /apis/aicli.dev/v1alpha1/spendhistory", spendapi.NewHandler(svc, spendapi.HomesUnder(dataDir)))
	srv.API.Handle("GET /apis/aicli.dev/v1alpha1/namespaces/{namespace}/spendhistory", spendapi.NewHandler(svc, spendapi.HomesUnder(dataDir)))
	return srv.ServeUnix(t)
}

var dataChart = regexp.MustCompile(`id="(chart-[a-z]+)" data-chart="([^"]*)"`)

// charts returns the page's data-chart specs by element id.
func charts(t *testing.T, body string) map[string]chartSpec {
	t.Helper()
	out := map[string]chartSpec{}
	for _, m := range dataChart.FindAllStringSubmatch(body, -1) {
		var c chartSpec
		if err := json.Unmarshal([]byte(html.UnescapeString(m[2])), &c); err != nil {
			t.Fatalf("%s: %v: %s", m[1], err, m[2])
		}
		out[m[1]] = c
	}
	return out
}

func series(c chartSpec, label string) []int64 {
	for _, s := range c.Series {
		if s.Label == label {
			return s.Values
		}
	}
	return nil
}

func TestSpendPageChartsKnownSpend(t *testing.T) {
	dir := t.TempDir()
	today := time.Now().UTC()
	yesterday := today.AddDate(0, 0, -1)
	home := layout.Dir(dir).AgentHome("default", "coder")
	if err := spendtest.WriteClaude(home, "s1",
		spendtest.Claude{At: yesterday, Model: "claude-sonnet-4-5-20250929", Input: 100, CacheRead: 1000, CacheWrite: 10, Output: 50},
		spendtest.Claude{At: today, Model: "claude-sonnet-4-5-20250929", Input: 200, CacheRead: 2000, CacheWrite: 20, Output: 70},
		spendtest.Claude{At: today, Model: "claude-haiku-4-5-20251001", Input: 1, CacheRead: 2, CacheWrite: 3, Output: 4},
	); err != nil {
		t.Fatal(err)
	}
	other := layout.Dir(dir).AgentHome("team", "reviewer")
	if err := spendtest.WriteClaude(other, "s2", spendtest.Claude{At: today, Model: "claude-sonnet-4-5-20250929", Input: 5, Output: 5}); err != nil {
		t.Fatal(err)
	}
	if err := spendtest.WriteCodexQuota(other, "q1", spendtest.CodexQuota{At: today, PrimaryPercent: 42.5, WeeklyPercent: 12}); err != nil {
		t.Fatal(err)
	}
	c := newTestConsole(t, state.Supervisor{Name: "alpha", Server: spendSupervisor(t, dir)},
		state.Supervisor{Name: "gone", Server: "unix:///nonexistent/supervisor.sock"})

	code, body := c.get("/manage/spend?days=7")
	if code != http.StatusOK {
		t.Fatalf("spend page: %d %s", code, body)
	}
	ch := charts(t, body)
	b, m := ch["chart-buckets"], ch["chart-models"]
	if len(b.Days) != 7 || !b.Stacked || len(b.Series) != 4 {
		t.Fatalf("bucket chart: %+v", b)
	}
	want := map[string][2]int64{"uncached input": {100, 206}, "cache read": {1000, 2002}, "cache write": {10, 23}, "output": {50, 79}}
	for label, w := range want {
		v := series(b, label)
		if len(v) != 7 || v[5] != w[0] || v[6] != w[1] || v[0] != 0 {
			t.Fatalf("bucket %s: %v, want …%v", label, v, w)
		}
	}
	if v := series(m, "claude-sonnet-4-5-20250929"); len(v) != 7 || v[5] != 1160 || v[6] != 2300 {
		t.Fatalf("model chart: %+v", m)
	}
	if v := series(m, "claude-haiku-4-5-20251001"); len(v) != 7 || v[6] != 10 {
		t.Fatalf("model chart: %+v", m)
	}
	if time.Unix(b.Days[6], 0).UTC().Format(time.DateOnly) != today.Format(time.DateOnly) {
		t.Fatalf("last day %v, want today", time.Unix(b.Days[6], 0))
	}
	mustContain(t, "spend page", body, "supervisor gone:", "Per agent", "default/coder", "team/reviewer",
		"primary (300 min)", "42.5%", "secondary (10080 min)", `<label for="spend-agent">`)

	// One agent: its spend only.
	code, body = c.get("/manage/spend?days=7&agent=alpha/team/reviewer")
	if code != http.StatusOK {
		t.Fatalf("agent spend: %d %s", code, body)
	}
	if v := series(charts(t, body)["chart-buckets"], "output"); v[6] != 5 || v[5] != 0 {
		t.Fatalf("agent output: %v", v)
	}
	mustNotContain(t, "agent spend", body, "default/coder</a>")
	code, _ = c.get("/manage/spend?agent=nope")
	if code != http.StatusBadRequest {
		t.Fatalf("bad agent filter: %d", code)
	}
}
