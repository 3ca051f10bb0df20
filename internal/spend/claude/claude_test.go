package claude

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"aicli.dev/aicli/internal/spend"
)

func assistant(extra, usage string) string {
	return `{"parentUuid":"p","isSidechain":false,"message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"he said \"usage\": {}"}],"usage":` +
		usage + `}` + extra + `,"requestId":"req_1","type":"assistant","uuid":"u","timestamp":"2025-11-03T10:00:01.500Z"}`
}

func TestLine(t *testing.T) {
	std := `{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":50}`
	tests := []struct {
		name   string
		line   string
		ok     bool
		events []spend.Event
	}{
		{"plain usage, no breakdown: all writes are 5-minute", assistant("", std), true, []spend.Event{{
			UnixMilli: 1762164001500, Model: "claude-sonnet-4-5-20250929", Dedup: "msg_1", DedupVariant: "req_1",
			Tokens: spend.Buckets{UncachedInput: 10, CacheRead: 1000, CacheWrite5m: 100, Output: 50}}}},
		{"breakdown that adds up keeps the 1-hour split",
			assistant("", `{"input_tokens":1,"cache_creation_input_tokens":100,"cache_read_input_tokens":0,"output_tokens":2,"cache_creation":{"ephemeral_5m_input_tokens":60,"ephemeral_1h_input_tokens":40}}`),
			true, []spend.Event{{UnixMilli: 1762164001500, Model: "claude-sonnet-4-5-20250929", Dedup: "msg_1", DedupVariant: "req_1",
				Tokens: spend.Buckets{UncachedInput: 1, CacheWrite5m: 60, CacheWrite1h: 40, Output: 2}}}},
		{"zero breakdown: the billed total wins, remainder is 5-minute",
			assistant("", `{"input_tokens":1,"cache_creation_input_tokens":100,"cache_read_input_tokens":0,"output_tokens":2,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0}}`),
			true, []spend.Event{{UnixMilli: 1762164001500, Model: "claude-sonnet-4-5-20250929", Dedup: "msg_1", DedupVariant: "req_1",
				Tokens: spend.Buckets{UncachedInput: 1, CacheWrite5m: 100, Output: 2}}}},
		{"1-hour part larger than the total is capped",
			assistant("", `{"input_tokens":0,"cache_creation_input_tokens":30,"output_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":90}}`),
			true, []spend.Event{{UnixMilli: 1762164001500, Model: "claude-sonnet-4-5-20250929", Dedup: "msg_1", DedupVariant: "req_1",
				Tokens: spend.Buckets{CacheWrite1h: 30}}}},
		{"sidechain copy is marked", `{"isSidechain":true,"message":{"id":"msg_9","model":"claude-opus-4-5","usage":{"input_tokens":3,"output_tokens":4}},"requestId":"req_x","type":"assistant","timestamp":"2025-11-03T00:00:00Z"}`,
			true, []spend.Event{{UnixMilli: 1762128000000, Model: "claude-opus-4-5", Dedup: "msg_9", DedupVariant: "req_x", Sidechain: true,
				Tokens: spend.Buckets{UncachedInput: 3, Output: 4}}}},
		{"no message.id: counted without dedup", `{"message":{"model":"claude-opus-4-5","usage":{"input_tokens":3,"output_tokens":4}},"requestId":"req_x","type":"assistant","timestamp":"2025-11-03T00:00:00Z"}`,
			true, []spend.Event{{UnixMilli: 1762128000000, Model: "claude-opus-4-5", Tokens: spend.Buckets{UncachedInput: 3, Output: 4}}}},
		{"synthetic API-error line is skipped", `{"message":{"id":"m","model":"<synthetic>","usage":{"input_tokens":0,"output_tokens":0}},"type":"assistant","timestamp":"2025-11-03T00:00:00Z"}`, true, nil},
		{"user line mentioning usage is skipped", `{"type":"user","message":{"role":"user","content":"x"},"usage":{"input_tokens":5},"timestamp":"2025-11-03T00:00:00Z"}`, true, nil},
		{"line without usage is skipped cheaply", `{"type":"summary","summary":"s"}`, true, nil},
		{"unknown record type is skipped", `{"type":"file-history-snapshot","snapshot":{"usage":{"x":1}}}`, true, nil},
		{"truncated JSON", assistant("", std)[:120], false, nil},
		{"truncated inside usage", `{"type":"assistant","message":{"id":"m","usage":{"input_tokens":5,`, false, nil},
		{"binary garbage", "\x00\x01\xff\xfe{garbage", false, nil},
		{"negative token count", assistant("", `{"input_tokens":-5,"output_tokens":1}`), false, nil},
		{"string token count", assistant("", `{"input_tokens":"5","output_tokens":1}`), false, nil},
		{"fractional token count", assistant("", `{"input_tokens":5.5,"output_tokens":1}`), false, nil},
		{"bad timestamp", `{"message":{"id":"m","model":"claude-opus-4-5","usage":{"input_tokens":1}},"type":"assistant","timestamp":"yesterday"}`, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fp, err := Parser{}.NewFile("x", nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []spend.Event
			ok := fp.Line([]byte(tc.line), func(e spend.Event) { got = append(got, e) })
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if len(got) != len(tc.events) {
				t.Fatalf("events = %+v, want %+v", got, tc.events)
			}
			for i := range got {
				if got[i] != tc.events[i] {
					t.Errorf("event %d = %+v, want %+v", i, got[i], tc.events[i])
				}
			}
		})
	}
}

func TestDiscoverRecursiveAndRoots(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, p := range []string{
		filepath.Join(a, "projects", "-w", "s1.jsonl"),
		filepath.Join(a, "projects", "-w", "s1", "subagents", "agent-1.jsonl"),
		filepath.Join(a, "projects", "-w", "notes.txt"),
		filepath.Join(b, "projects", "-x", "s2.jsonl"),
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := Parser{}.Discover([]string{a, b, filepath.Join(a, "missing")}, spend.ReadDir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		rel, _ := filepath.Rel(filepath.Dir(filepath.Dir(f.Path)), f.Path)
		got = append(got, rel)
	}
	sort.Strings(got)
	want := []string{"-w/s1.jsonl", "-x/s2.jsonl", "subagents/agent-1.jsonl"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	env := map[string]string{"CLAUDE_CONFIG_DIR": a + ", " + b}
	if r := DefaultRoots(func(k string) string { return env[k] }, "/h"); len(r) != 2 || r[0] != a || r[1] != b {
		t.Fatalf("DefaultRoots with env = %v", r)
	}
	if r := DefaultRoots(func(string) string { return "" }, "/h"); len(r) != 2 || r[0] != "/h/.config/claude" || r[1] != "/h/.claude" {
		t.Fatalf("DefaultRoots without env = %v", r)
	}
}
