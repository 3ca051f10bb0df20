package compare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/hack/spend/treegen"
	"aicli.dev/aicli/internal/spend"
)

// ccusage installs (or finds) the pinned reference tool; failing to get it fails the test, never skips it.
func ccusage(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prefix, err := filepath.Abs(filepath.Join("..", ".ccusage"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := EnsureCCUsage(ctx, prefix)
	if err != nil {
		t.Fatalf("ccusage is required for this comparison: %v", err)
	}
	return bin
}

func compareTree(t *testing.T, bin, claudeDir, codexDir string) {
	t.Helper()
	ctx := context.Background()
	for _, h := range []spend.Harness{spend.HarnessClaude, spend.HarnessCodex} {
		ref, err := CCUsage(ctx, bin, h, claudeDir, codexDir)
		if err != nil {
			t.Fatal(err)
		}
		got, rep, err := Ours(ctx, h, claudeDir, codexDir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ref) == 0 {
			t.Fatalf("%s: ccusage found no usage; the tree is not exercising anything", h)
		}
		if d := Diff(ref, got); len(d) > 0 {
			t.Errorf("%s: %d cells differ from ccusage:\n%s", h, len(d), strings.Join(d, "\n"))
		}
		if rep.UnparseableFiles != 0 {
			t.Errorf("%s: unparseable files %d", h, rep.UnparseableFiles)
		}
		t.Logf("%s: %d day/model cells agree with ccusage", h, len(ref))
	}
}

func TestMatchesCCUsageOnGeneratedTrees(t *testing.T) {
	bin := ccusage(t)
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			dir := t.TempDir()
			o := treegen.Options{Seed: seed, Bytes: 3 << 20, BigContent: 8 << 10, Days: 4}
			if _, err := treegen.Claude(filepath.Join(dir, "claude"), o); err != nil {
				t.Fatal(err)
			}
			if _, err := treegen.Codex(filepath.Join(dir, "codex"), o); err != nil {
				t.Fatal(err)
			}
			compareTree(t, bin, filepath.Join(dir, "claude"), filepath.Join(dir, "codex"))
		})
	}
}

func write(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func cl(msgID, reqID string, side bool, model, ts string, in, read, write, out int, extra string) string {
	return fmt.Sprintf(`{"parentUuid":null,"isSidechain":%t,"sessionId":"s1","message":{"id":%q,"type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":"x"}],"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d%s}},"requestId":%q,"type":"assistant","uuid":"u-%s","timestamp":%q}`,
		side, msgID, model, in, write, read, out, extra, reqID, msgID, ts)
}

func cx(ts, total, last string) string {
	return fmt.Sprintf(`{"timestamp":%q,"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":%s,"last_token_usage":%s},"rate_limits":null}}`, ts, total, last)
}

func u(in, cached, write, out int) string {
	return fmt.Sprintf(`{"input_tokens":%d,"cached_input_tokens":%d,"cache_write_input_tokens":%d,"output_tokens":%d,"reasoning_output_tokens":0,"total_tokens":%d}`, in, cached, write, out, in+out)
}

const sonnet, opus = "claude-sonnet-4-5-20250929", "claude-opus-4-5-20251101"

// TestMatchesCCUsageOnRuleTree covers the spend rules (docs/spend.md) where we and ccusage agree.
func TestMatchesCCUsageOnRuleTree(t *testing.T) {
	bin := ccusage(t)
	dir := t.TempDir()
	c, x := filepath.Join(dir, "claude"), filepath.Join(dir, "codex")
	split := `,"cache_creation":{"ephemeral_5m_input_tokens":60,"ephemeral_1h_input_tokens":40}`
	write(t, filepath.Join(c, "projects", "-w", "s1.jsonl"),
		`{"type":"user","sessionId":"s1","message":{"role":"user","content":"hi \"usage\":{}"},"timestamp":"2025-11-03T09:59:00Z"}`,
		cl("msg_1", "req_1", false, sonnet, "2025-11-03T10:00:00Z", 10, 1000, 100, 1, split),  // streaming placeholder
		cl("msg_1", "req_1", false, sonnet, "2025-11-03T10:00:01Z", 10, 1000, 100, 77, split), // final: largest wins
		cl("msg_2", "req_2", false, opus, "2025-11-03T23:59:59.999Z", 5, 0, 0, 5, ""),
		cl("msg_3", "req_3", false, opus, "2025-11-04T00:00:00Z", 6, 0, 0, 6, ""), // next UTC day
		cl("msg_4", "req_4", false, "<synthetic>", "2025-11-04T00:00:01Z", 0, 0, 0, 0, ""),
		cl("msg_5", "req_5", false, sonnet, "2025-11-04T00:00:02Z", 300_000, 0, 0, 10, ""), // long context request
		strings.Replace(cl("msg_6", "req_6", false, sonnet, "2025-11-04T00:00:03Z", 1, 0, 0, 1, ""), `"input_tokens":1`, `"input_tokens":-4`, 1),
		strings.Replace(cl("msg_7", "req_7", false, sonnet, "2025-11-04T00:00:04Z", 1, 0, 0, 1, ""), `"input_tokens":1`, `"input_tokens":"4"`, 1),
		`{"type":"assistant","message":{"id":"msg_8","usage":{"input_tok`, // truncated line
		`{"type":"summary","summary":"a future record type"}`,
	)
	// resumed session copies earlier lines; subagent transcript with its own requests and a sidechain replay
	write(t, filepath.Join(c, "projects", "-w", "s2.jsonl"),
		cl("msg_1", "req_1", false, sonnet, "2025-11-03T10:00:01Z", 10, 1000, 100, 77, split),
		cl("msg_9", "req_9", false, sonnet, "2025-11-05T08:00:00Z", 9, 90, 0, 9, ""))
	write(t, filepath.Join(c, "projects", "-w", "s1", "subagents", "agent-a.jsonl"),
		cl("msg_2", "req_side_2", true, opus, "2025-11-03T23:59:59.999Z", 5, 0, 0, 5, ""),
		cl("msg_10", "req_10", true, "claude-haiku-4-5-20251001", "2025-11-05T09:00:00Z", 10, 10, 10, 10, ""))
	rollout := "rollout-2025-11-03T10-00-00-0199a000-0000-7000-8000-000000000001.jsonl"
	parent := []string{
		`{"timestamp":"2025-11-03T10:00:00.000Z","type":"session_meta","payload":{"id":"0199a000-0000-7000-8000-000000000001","timestamp":"2025-11-03T10:00:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.171.0","source":"cli"}}`,
		`{"timestamp":"2025-11-03T10:00:01.000Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5-codex"}}`,
		`{"timestamp":"2025-11-03T10:00:01.500Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"\"type\":\"token_count\""}]}}`,
		cx("2025-11-03T10:00:02.000Z", u(1000, 600, 100, 50), u(1000, 600, 100, 50)),
		cx("2025-11-03T10:00:03.000Z", u(1000, 600, 100, 50), u(1000, 600, 100, 50)), // rate-limit refresh
		`{"timestamp":"2025-11-03T10:00:04.000Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":null}}`,
		`{"timestamp":"2025-11-03T10:05:00.000Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5.2-codex"}}`,
		cx("2025-11-03T10:05:02.000Z", u(3000, 2000, 100, 80), u(2000, 1400, 0, 30)),
		cx("2025-11-03T23:59:59.000Z", u(500, 100, 0, 5), u(500, 100, 0, 5)), // totals reset (compaction)
		cx("2025-11-04T00:10:00.000Z", u(900, 300, 50, 9), u(400, 200, 50, 4)),
	}
	write(t, filepath.Join(x, "sessions", "2025", "11", "03", rollout), parent...)
	write(t, filepath.Join(x, "archived_sessions", rollout), parent...) // archived copy: the active one wins
	fork := append([]string{
		`{"timestamp":"2025-11-04T01:00:00.000Z","type":"session_meta","payload":{"id":"0199a000-0000-7000-8000-000000000002","forked_from_id":"0199a000-0000-7000-8000-000000000001","timestamp":"2025-11-04T01:00:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.171.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":"0199a000-0000-7000-8000-000000000001","depth":1}}}}}`,
	}, parent[1:]...)
	fork = append(fork, cx("2025-11-04T01:00:30.000Z", u(1900, 300, 50, 19), u(1000, 0, 0, 10)))
	write(t, filepath.Join(x, "sessions", "2025", "11", "04", "rollout-2025-11-04T01-00-00-0199a000-0000-7000-8000-000000000002.jsonl"), fork...)
	compareTree(t, bin, c, x)
}

// TestDocumentedDepartures pins each place where our rules knowingly depart from ccusage (docs/spend.md).
func TestDocumentedDepartures(t *testing.T) {
	bin := ccusage(t)
	dir := t.TempDir()
	c, x := filepath.Join(dir, "claude"), filepath.Join(dir, "codex")
	write(t, filepath.Join(c, "projects", "-w", "s.jsonl"),
		// 1. the cache-write breakdown does not add up to the billed total: ccusage sums the breakdown, we bill the total
		cl("msg_1", "req_1", false, sonnet, "2025-11-03T10:00:00Z", 1, 0, 100, 1, `,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0}`),
		cl("msg_2", "req_2", false, sonnet, "2025-11-03T10:00:00Z", 1, 0, 100, 1, `,"cache_creation":{"ephemeral_5m_input_tokens":10,"ephemeral_1h_input_tokens":20}`),
		// 2. an assistant usage line with no model: ccusage drops it, we count it under "unknown" (unpriced)
		`{"message":{"id":"msg_3","usage":{"input_tokens":7,"output_tokens":3}},"requestId":"req_3","type":"assistant","timestamp":"2025-11-03T10:00:00Z","sessionId":"s1"}`)
	ctx := context.Background()
	ref, err := CCUsage(ctx, bin, spend.HarnessClaude, c, x)
	if err != nil {
		t.Fatal(err)
	}
	got, rep, err := Ours(ctx, spend.HarnessClaude, c, x)
	if err != nil {
		t.Fatal(err)
	}
	cell := Cell{"2025-11-03", sonnet}
	if ref[cell].CacheWrite != 30 || got[cell].CacheWrite != 200 {
		t.Errorf("cache-write departure changed: ccusage %d (want 30), ours %d (want 200)", ref[cell].CacheWrite, got[cell].CacheWrite)
	}
	if ref[cell].Input != got[cell].Input || ref[cell].Output != got[cell].Output || ref[cell].CacheRead != got[cell].CacheRead {
		t.Errorf("other buckets must agree: ccusage %+v ours %+v", ref[cell], got[cell])
	}
	unknown := Cell{"2025-11-03", "unknown"}
	if _, ok := ref[unknown]; ok || got[unknown] != (Tokens{Input: 7, Output: 3}) || !slices.Contains(rep.UnpricedModels, "unknown") {
		t.Errorf("model-less departure changed: ccusage %v, ours %+v, unpriced %v", ref, got[unknown], rep.UnpricedModels)
	}
}
