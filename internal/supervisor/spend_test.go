package supervisor

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"aicli.dev/aicli/internal/layout"
)

// TestSpendHistoryOverAgentHomes checks the mounted spend endpoint reads the
// session stores the CLIs write into agents' durable homes.
func TestSpendHistoryOverAgentHomes(t *testing.T) {
	dir := t.TempDir()
	session := filepath.Join(layout.Dir(dir).AgentHome("team-a", "coder"), ".claude", "projects", "-workspace", "s1.jsonl")
	if err := os.MkdirAll(filepath.Dir(session), 0o700); err != nil {
		t.Fatal(err)
	}
	line := `{"type":"assistant","timestamp":"2026-11-30T10:00:00Z","requestId":"r1","message":{"id":"m1","model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":100,"output_tokens":50,"cache_read_input_tokens":10,"cache_creation_input_tokens":5}}}` + "\n"
	if err := os.WriteFile(session, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	startSupervisor(t, Config{DataDir: dir, OfflinePricing: true})
	c := unixClient(layout.Dir(dir).Socket())
	for _, path := range []string{"/apis/aicli.dev/v1alpha1/spendhistory?since=2026-11-01", "/apis/aicli.dev/v1alpha1/namespaces/team-a/spendhistory?since=2026-11-01"} {
		resp, err := c.Get("http://supervisor" + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		var out struct {
			Days []struct {
				Date   string `json:"date"`
				Models []struct {
					Model         string `json:"model"`
					UncachedInput int64  `json:"uncachedInput"`
					Output        int64  `json:"output"`
				} `json:"models"`
			} `json:"days"`
		}
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Days) != 1 || out.Days[0].Date != "2026-11-30" || len(out.Days[0].Models) != 1 ||
			out.Days[0].Models[0].UncachedInput != 100 || out.Days[0].Models[0].Output != 50 {
			t.Fatalf("%s: unexpected history %s", path, body)
		}
	}
}
