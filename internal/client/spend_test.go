package client_test

import (
	"os"
	"path/filepath"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/spend/spendapi"
)

// SpendHistory reads the real spendhistory endpoint, mounted as the
// supervisor mounts it, over agent homes holding one Claude and one Codex
// session.
func TestSpendHistory(t *testing.T) {
	data := t.TempDir()
	files := map[string]string{
		"agents/ns1/alice/home/.claude/projects/-w/s.jsonl": `{"message":{"id":"m1","model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":20}},"requestId":"r1","type":"assistant","timestamp":"2025-11-03T10:00:00Z"}` + "\n",
		"agents/ns2/bob/home/.codex/sessions/2025/11/03/rollout-x.jsonl": `{"timestamp":"2025-11-03T10:00:01Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}` + "\n" +
			`{"timestamp":"2025-11-03T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10}},"rate_limits":{"primary":{"used_percent":12.5,"window_minutes":300,"resets_in_seconds":60}}}}` + "\n",
	}
	for p, content := range files {
		p = filepath.Join(data, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := spendapi.NewService(spendapi.Config{DataDir: data, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := apiservertest.New(t)
	h := spendapi.NewHandler(svc, spendapi.HomesUnder(data))
	srv.API.Handle("GET "+apischema.APIPath+"/spendhistory", apiserver.Authorized("spendhistory", h))
	srv.API.Handle("GET "+apischema.APIPath+"/namespaces/{namespace}/spendhistory", apiserver.Authorized("spendhistory", h))
	url, ca := srv.ServeTLS(t, map[string][]string{"admin": {"*"}, "ns2": {"ns2"}})
	admin := newClient(t, client.Config{Server: url, Token: "admin", CAFile: ca})
	ns2 := newClient(t, client.Config{Server: url, Token: "ns2", CAFile: ca})
	ctx := ctx(t)

	rep, err := admin.SpendHistory(ctx, "", client.SpendOptions{Since: "2025-11-01"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Days) != 1 || rep.Days[0].Date != "2025-11-03" || len(rep.Days[0].Models) != 2 || len(rep.Agents) != 2 {
		t.Fatalf("every namespace: %+v", rep)
	}
	if m := rep.Days[0].Models[0]; m.UncachedInput != 10 || m.CacheRead != 100 || m.CacheWrite != 5 || m.Output != 20 {
		t.Fatalf("claude buckets: %+v", m)
	}
	rep, err = ns2.SpendHistory(ctx, "ns2", client.SpendOptions{Since: "2025-11-01", Agent: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Agents) != 1 || rep.Agents[0].Agent != "bob" || len(rep.Quota) != 1 || rep.Quota[0].Primary.UsedPercent != 12.5 {
		t.Fatalf("ns2/bob: %+v", rep)
	}
	if _, err := ns2.SpendHistory(ctx, "", client.SpendOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("every namespace with a namespace-bound token: %v", err)
	}
	if _, err := admin.SpendHistory(ctx, "ns1", client.SpendOptions{Since: "last week"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("bad since: %v", err)
	}
}
