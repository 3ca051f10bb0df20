package spendapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"aicli.dev/aicli/internal/spend"
)

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const claudeLine = `{"message":{"id":"m1","model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":20}},"requestId":"r1","type":"assistant","timestamp":"2025-11-03T10:00:00Z"}` + "\n"
const codexLines = `{"timestamp":"2025-11-03T10:00:01Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}` + "\n" +
	`{"timestamp":"2025-11-03T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10}},"rate_limits":{"primary":{"used_percent":12.5,"window_minutes":300,"resets_in_seconds":60},"secondary":{"used_percent":40,"window_minutes":10080,"resets_in_seconds":600}}}}` + "\n"

func TestHandler(t *testing.T) {
	data := t.TempDir()
	writeFile(t, filepath.Join(data, "agents", "ns1", "alice", "home", ".claude", "projects", "-w", "s.jsonl"), claudeLine)
	writeFile(t, filepath.Join(data, "agents", "ns2", "bob", "home", ".codex", "sessions", "2025", "11", "03", "rollout-x.jsonl"), codexLines)
	svc, err := NewService(Config{DataDir: data, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h := NewHandler(svc, HomesUnder(data))
	mux.Handle("GET /apis/aicli.dev/v1alpha1/spendhistory", h)
	mux.Handle("/apis/aicli.dev/v1alpha1/namespaces/{namespace}/spendhistory", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	get := func(path string, wantCode int) *spend.Report {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != wantCode {
			t.Fatalf("GET %s: %d, want %d", path, resp.StatusCode, wantCode)
		}
		if wantCode != http.StatusOK {
			return nil
		}
		var rep spend.Report
		if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
			t.Fatal(err)
		}
		return &rep
	}
	rep := get("/apis/aicli.dev/v1alpha1/spendhistory?since=2025-11-01", http.StatusOK)
	if len(rep.Days) != 1 || len(rep.Days[0].Models) != 2 || len(rep.Agents) != 2 || len(rep.Quota) != 1 || rep.PricingSource != "bundled" {
		t.Fatalf("all namespaces: %+v", rep)
	}
	cm := rep.Days[0].Models[0]
	if cm.Harness != "claude" || cm.UncachedInput != 10 || cm.CacheRead != 100 || cm.CacheWrite != 5 || cm.Output != 20 || !cm.Priced || cm.CostUSD <= 0 {
		t.Fatalf("claude row %+v", cm)
	}
	rep = get("/apis/aicli.dev/v1alpha1/namespaces/ns2/spendhistory?since=2025-11-01", http.StatusOK)
	if len(rep.Agents) != 1 || rep.Agents[0].Agent != "bob" || len(rep.Days[0].Models) != 1 || rep.Days[0].Models[0].UncachedInput != 60 {
		t.Fatalf("ns2: %+v", rep)
	}
	if q := rep.Quota[0]; q.Agent != "bob" || q.Primary.UsedPercent != 12.5 || q.Secondary.UsedPercent != 40 {
		t.Fatalf("quota %+v", q)
	}
	rep = get("/apis/aicli.dev/v1alpha1/spendhistory?since=2025-11-01&namespace=ns1", http.StatusOK)
	if len(rep.Agents) != 1 || rep.Agents[0].Agent != "alice" {
		t.Fatalf("namespace query: %+v", rep.Agents)
	}
	rep = get("/apis/aicli.dev/v1alpha1/spendhistory?since=2025-11-01&agent=bob", http.StatusOK)
	if len(rep.Agents) != 1 || rep.Agents[0].Agent != "bob" || len(rep.Days) != 1 || len(rep.Days[0].Models) != 1 || len(rep.Quota) != 1 {
		t.Fatalf("agent query: %+v", rep)
	}
	if rep = get("/apis/aicli.dev/v1alpha1/namespaces/ns1/spendhistory?since=2025-11-01&agent=bob", http.StatusOK); len(rep.Agents) != 0 ||
		len(rep.Days) != 0 {
		t.Fatalf("agent of another namespace: %+v", rep)
	}
	if rep = get("/apis/aicli.dev/v1alpha1/spendhistory?since=2025-12-01", http.StatusOK); len(rep.Days) != 0 {
		t.Fatalf("since filter: %+v", rep.Days)
	}
	get("/apis/aicli.dev/v1alpha1/spendhistory?since=yesterday", http.StatusBadRequest)
	resp, err := http.Post(srv.URL+"/apis/aicli.dev/v1alpha1/namespaces/ns1/spendhistory", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
}
