package codex

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"aicli.dev/aicli/internal/spend"
)

func tc(ts string, total, last string) string {
	info := "null"
	if total != "" || last != "" {
		info = "{"
		if total != "" {
			info += `"total_token_usage":` + total
		}
		if last != "" {
			if total != "" {
				info += ","
			}
			info += `"last_token_usage":` + last
		}
		info += "}"
	}
	return fmt.Sprintf(`{"timestamp":"%s","type":"event_msg","payload":{"type":"token_count","info":%s,"rate_limits":null}}`, ts, info)
}

func u(in, cached, write, out int) string {
	return fmt.Sprintf(`{"input_tokens":%d,"cached_input_tokens":%d,"cache_write_input_tokens":%d,"output_tokens":%d,"reasoning_output_tokens":1,"total_tokens":%d}`, in, cached, write, out, in+out)
}

func turn(ts, model string) string {
	return fmt.Sprintf(`{"timestamp":"%s","type":"turn_context","payload":{"cwd":"/w","model":"%s"}}`, ts, model)
}

const meta = `{"timestamp":"2025-11-03T10:00:00.000Z","type":"session_meta","payload":{"id":"s","timestamp":"2025-11-03T10:00:00.000Z","cli_version":"0.171.0"}}`

type want struct {
	model  string
	tokens spend.Buckets
}

func TestTokenCounting(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		bad   int
		want  []want
	}{
		{"deltas of total_token_usage; cache writes subtracted from input", []string{meta, turn("2025-11-03T10:00:01Z", "gpt-5-codex"),
			tc("2025-11-03T10:00:02Z", u(1000, 600, 100, 50), u(1000, 600, 100, 50)),
			tc("2025-11-03T10:00:03Z", u(3000, 2000, 100, 80), u(9, 9, 9, 9))},
			0, []want{{"gpt-5-codex", spend.Buckets{UncachedInput: 300, CacheRead: 600, CacheWrite5m: 100, Output: 50}},
				{"gpt-5-codex", spend.Buckets{UncachedInput: 600, CacheRead: 1400, Output: 30}}}},
		{"unchanged totals (rate-limit refresh) and info null count nothing", []string{meta, turn("2025-11-03T10:00:01Z", "gpt-5"),
			tc("2025-11-03T10:00:02Z", u(100, 0, 0, 10), u(100, 0, 0, 10)),
			tc("2025-11-03T10:00:03Z", u(100, 0, 0, 10), u(100, 0, 0, 10)),
			tc("2025-11-03T10:00:04Z", "", "")},
			0, []want{{"gpt-5", spend.Buckets{UncachedInput: 100, Output: 10}}}},
		{"totals drop after compaction: last_token_usage counts", []string{meta, turn("2025-11-03T10:00:01Z", "gpt-5"),
			tc("2025-11-03T10:00:02Z", u(5000, 0, 0, 10), u(5000, 0, 0, 10)),
			tc("2025-11-03T10:00:03Z", u(700, 100, 0, 5), u(700, 100, 0, 5)),
			tc("2025-11-03T10:00:04Z", u(900, 100, 0, 6), u(200, 0, 0, 1))},
			0, []want{{"gpt-5", spend.Buckets{UncachedInput: 5000, Output: 10}}, {"gpt-5", spend.Buckets{UncachedInput: 600, CacheRead: 100, Output: 5}},
				{"gpt-5", spend.Buckets{UncachedInput: 200, Output: 1}}}},
		{"missing totals: last_token_usage counts", []string{meta, turn("2025-11-03T10:00:01Z", "gpt-5"),
			tc("2025-11-03T10:00:02Z", "", u(40, 10, 0, 4))},
			0, []want{{"gpt-5", spend.Buckets{UncachedInput: 30, CacheRead: 10, Output: 4}}}},
		{"model from the latest turn_context, changing mid-file", []string{meta, turn("2025-11-03T10:00:01Z", "gpt-5-codex"),
			tc("2025-11-03T10:00:02Z", u(10, 0, 0, 1), ""), turn("2025-11-03T10:00:03Z", "gpt-5.2-codex"),
			tc("2025-11-03T10:00:04Z", u(30, 0, 0, 2), "")},
			0, []want{{"gpt-5-codex", spend.Buckets{UncachedInput: 10, Output: 1}}, {"gpt-5.2-codex", spend.Buckets{UncachedInput: 20, Output: 1}}}},
		{"no turn_context: model unknown", []string{meta, tc("2025-11-03T10:00:02Z", u(10, 0, 0, 1), "")},
			0, []want{{UnknownModel, spend.Buckets{UncachedInput: 10, Output: 1}}}},
		{"forked file: the replayed parent prefix only moves the baseline", []string{
			`{"timestamp":"2025-11-03T12:00:00.000Z","type":"session_meta","payload":{"id":"c","forked_from_id":"s","timestamp":"2025-11-03T12:00:00.000Z","source":{"subagent":{"thread_spawn":{"parent_thread_id":"s"}}}}}`,
			turn("2025-11-03T10:00:01Z", "gpt-5"),
			tc("2025-11-03T10:00:02Z", u(100, 0, 0, 10), u(100, 0, 0, 10)),
			tc("2025-11-03T11:00:02Z", u(300, 0, 0, 20), u(200, 0, 0, 10)),
			tc("2025-11-03T12:00:20Z", u(350, 0, 0, 25), u(50, 0, 0, 5))},
			0, []want{{"gpt-5", spend.Buckets{UncachedInput: 50, Output: 5}}}},
		{"forked file with a rewritten burst at the fork instant", []string{
			`{"timestamp":"2025-11-03T12:00:00.000Z","type":"session_meta","payload":{"id":"c","timestamp":"2025-11-03T12:00:00.000Z","source":{"subagent":"review"}}}`,
			turn("2025-11-03T12:00:00.100Z", "gpt-5"),
			tc("2025-11-03T12:00:00.200Z", u(100, 0, 0, 10), ""),
			tc("2025-11-03T12:00:00.900Z", u(300, 0, 0, 20), ""),
			tc("2025-11-03T12:00:09Z", u(310, 0, 0, 21), "")},
			0, []want{{"gpt-5", spend.Buckets{UncachedInput: 10, Output: 1}}}},
		{"bad input: negative, string, truncated, garbage lines are counted", []string{meta, turn("2025-11-03T10:00:01Z", "gpt-5"),
			tc("2025-11-03T10:00:02Z", `{"input_tokens":-1,"output_tokens":1}`, ""),
			tc("2025-11-03T10:00:02Z", `{"input_tokens":"5","output_tokens":1}`, ""),
			`{"timestamp":"2025-11-03T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"total_to`,
			"\x00\x00\xffgarbage",
			`{"timestamp":"2025-11-03T10:00:05Z","type":"some_future_record","payload":{"anything":[1,2,3]}}`,
			`{"timestamp":"2025-11-03T10:00:05Z","type":"event_msg","payload":{"type":"agent_message","message":"hi"}}`,
			tc("2025-11-03T10:00:06Z", u(10, 0, 0, 1), "")},
			4, []want{{"gpt-5", spend.Buckets{UncachedInput: 10, Output: 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Feed the lines in two sessions, resuming from saved state half way: the result must not change.
			for split := 0; split <= len(tt.lines); split += max(1, len(tt.lines)/2) {
				var got []spend.Event
				bad := 0
				fp, err := Parser{}.NewFile("f", nil)
				if err != nil {
					t.Fatal(err)
				}
				for i, l := range tt.lines {
					if i == split {
						if fp, err = (Parser{}).NewFile("f", fp.State()); err != nil {
							t.Fatal(err)
						}
					}
					if !fp.Line([]byte(l), func(e spend.Event) { got = append(got, e) }) {
						bad++
					}
				}
				if bad != tt.bad {
					t.Errorf("split %d: unparseable = %d, want %d", split, bad, tt.bad)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("split %d: got %+v, want %+v", split, got, tt.want)
				}
				for i, w := range tt.want {
					if got[i].Model != w.model || got[i].Tokens != w.tokens {
						t.Errorf("split %d event %d: got %s %+v, want %s %+v", split, i, got[i].Model, got[i].Tokens, w.model, w.tokens)
					}
				}
			}
		})
	}
}

func TestQuotaNewest(t *testing.T) {
	fp, _ := Parser{}.NewFile("f", nil)
	lines := []string{
		`{"timestamp":"2025-11-03T10:00:00Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":10,"window_minutes":300,"resets_in_seconds":60},"secondary":{"used_percent":20,"window_minutes":10080,"resets_at":1762300000}}}}`,
		`{"timestamp":"2025-11-03T11:00:00Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":55.5,"window_minutes":300,"resets_in_seconds":120},"secondary":{"used_percent":70,"window_minutes":10080,"resets_at":1762300000}}}}`,
	}
	for _, l := range lines {
		if !fp.Line([]byte(l), func(spend.Event) {}) {
			t.Fatalf("line rejected: %s", l)
		}
	}
	resumed, _ := Parser{}.NewFile("f", fp.State())
	q := resumed.(spend.QuotaReporter).Quota()
	if q == nil || q.Primary == nil || q.Secondary == nil {
		t.Fatalf("quota = %+v", q)
	}
	if q.Primary.UsedPercent != 55.5 || q.Primary.WindowMinutes != 300 || q.Primary.ResetsAt != "2025-11-03T11:02:00Z" {
		t.Errorf("primary = %+v", q.Primary)
	}
	if q.Secondary.UsedPercent != 70 || q.Secondary.WindowMinutes != 10080 || q.Secondary.ResetsAt != "2025-11-04T23:46:40Z" {
		t.Errorf("secondary = %+v", q.Secondary)
	}
	if q.ObservedAt != "2025-11-03T11:00:00Z" {
		t.Errorf("observedAt = %s", q.ObservedAt)
	}
}

func TestDiscoverActiveCopyWins(t *testing.T) {
	root := t.TempDir()
	name := "rollout-2025-11-03T10-00-00-abc.jsonl"
	for _, p := range []string{filepath.Join(root, "sessions", "2025", "11", "03", name), filepath.Join(root, "archived_sessions", name),
		filepath.Join(root, "archived_sessions", "rollout-old.jsonl")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := Parser{}.Discover([]string{root}, spend.ReadDir)
	if err != nil {
		t.Fatal(err)
	}
	ranks := map[string][]int{}
	for _, f := range files {
		ranks[f.Key] = append(ranks[f.Key], f.Rank)
	}
	if len(ranks[name]) != 2 || len(ranks["rollout-old.jsonl"]) != 1 {
		t.Fatalf("keys = %v", ranks)
	}
	for _, f := range files {
		if f.Key == name && filepath.Base(filepath.Dir(f.Path)) == "archived_sessions" && f.Rank != 0 {
			t.Errorf("archived copy rank %d", f.Rank)
		}
		if f.Key == name && filepath.Base(filepath.Dir(f.Path)) == "03" && f.Rank != 1 {
			t.Errorf("active copy rank %d", f.Rank)
		}
	}
}
