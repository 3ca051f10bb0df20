package spend_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func reportJSON(t *testing.T, f *fixture, fresh bool) string {
	t.Helper()
	s := f.service()
	if fresh {
		idx := f.index
		f.index = filepath.Join(t.TempDir(), "scratch.bin")
		s = f.service()
		f.index = idx
	}
	rep := f.history(s)
	rep.IndexNote = ""
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLogReplayMatchesFullScan drives many incremental calls through one Service (each persisting a log record),
// then checks that reloading snapshot+log gives what a from-scratch scan gives, also with a torn log tail.
func TestLogReplayMatchesFullScan(t *testing.T) {
	f := newFixture(t)
	s := f.service()
	cxFile := "codex/sessions/2025/11/03/rollout-r.jsonl"
	f.write(cxFile, `{"timestamp":"2025-11-03T10:00:01Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}`+"\n")
	for i := 0; i < 40; i++ {
		file := fmt.Sprintf("claude/projects/-w/s%d.jsonl", i%3)
		if _, err := os.Stat(filepath.Join(f.dir, file)); err != nil {
			f.write(file, "")
		}
		f.appendTo(file, cl(fmt.Sprintf("m%d", i%17), "r", i%5 == 0, fmt.Sprintf("2025-11-%02dT10:00:00Z", 1+i%4), i, i, i, i))
		f.appendTo(cxFile, fmt.Sprintf(`{"timestamp":"2025-11-03T10:%02d:00Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":%d,"output_tokens":%d}}}}`+"\n", i, 100*(i+1), 10*i, i+1))
		if i == 25 {
			f.write("claude/projects/-w/s1.jsonl", cl("m99", "r", false, "2025-11-02T10:00:00Z", 1, 1, 1, 1)) // truncated
		}
		if i == 30 {
			if err := os.Remove(filepath.Join(f.dir, "claude/projects/-w/s2.jsonl")); err != nil {
				t.Fatal(err)
			}
		}
		f.history(s)
	}
	want := reportJSON(t, f, true)
	if got := f.history(s); got == nil {
		t.Fatal("no report")
	}
	if got := reportJSON(t, f, false); got != want {
		t.Fatalf("reloaded snapshot+log differs from a full scan:\n got %s\nwant %s", got, want)
	}
	log := f.index + ".log"
	fi, err := os.Stat(log)
	if err != nil || fi.Size() < 100 {
		t.Fatalf("expected a log with records: %v %v", fi, err)
	}
	// tear the last record: the index falls back to an earlier state and the next scan catches up
	if err := os.Truncate(log, fi.Size()-3); err != nil {
		t.Fatal(err)
	}
	if got := reportJSON(t, f, false); got != want {
		t.Fatalf("after a torn log tail:\n got %s\nwant %s", got, want)
	}
	// a log from another snapshot generation is ignored
	snap, err := os.ReadFile(f.index)
	if err != nil {
		t.Fatal(err)
	}
	snap[len("AICLISPENDIDX\x03")] ^= 0xff
	if err := os.WriteFile(f.index, snap, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := reportJSON(t, f, false); got != want {
		t.Fatalf("with a foreign log:\n got %s\nwant %s", got, want)
	}
}
