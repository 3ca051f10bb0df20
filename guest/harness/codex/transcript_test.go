package codex

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// three-turns-resumed.jsonl is a real Codex 0.171.0 rollout: two turns, then
// "codex resume <id>" and a third turn appended to the same file. Lines over
// 4 KiB (developer instructions) were removed and session_meta's base
// instructions blanked to keep the fixture small.
func TestParseTranscriptCapturedRollout(t *testing.T) {
	data, err := os.ReadFile("testdata/sessions/three-turns-resumed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{})
	got, err := a.ParseTranscript(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ role, text string }{
		{ptyapi.RoleUser, "hello there"},
		{ptyapi.RoleAssistant, "echo: hello there"},
		{ptyapi.RoleUser, "please stream a longer answer slowly now with many words in it"},
		{ptyapi.RoleAssistant, "echo: please stream a longer answer slowly now with many words in it"},
		{ptyapi.RoleUser, "third message"},
		{ptyapi.RoleAssistant, "echo: third message"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d: %+v", len(got), len(want), got)
	}
	seen := map[string]bool{}
	for i, w := range want {
		g := got[i]
		if g.Role != w.role || g.Text != w.text {
			t.Errorf("entry %d = %s %q; want %s %q", i, g.Role, g.Text, w.role, w.text)
		}
		if g.ID == "" || seen[g.ID] {
			t.Errorf("entry %d id %q empty or repeated", i, g.ID)
		}
		seen[g.ID] = true
		if g.Timestamp.IsZero() {
			t.Errorf("entry %d has no timestamp", i)
		}
	}
	if !strings.HasPrefix(got[1].ID, "msg_fake000001:") || got[1].MessageID != "msg_fake000001" {
		t.Errorf("assistant id = %q / %q, want the provider's item id", got[1].ID, got[1].MessageID)
	}
	// Line by line (as the guest follows the file) gives the same entries.
	var line []harness.TranscriptEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		es, err := a.ParseTranscript(bytes.NewReader(sc.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		line = append(line, es...)
	}
	if len(line) != len(got) {
		t.Fatalf("line by line %d entries, whole %d", len(line), len(got))
	}
	for i := range got {
		if line[i].ID != got[i].ID {
			t.Errorf("entry %d id differs line by line: %q vs %q", i, line[i].ID, got[i].ID)
		}
	}
}

// The capture had no tool calls; these items follow the rollout format.
func TestParseTranscriptToolItems(t *testing.T) {
	in := strings.Join([]string{
		`{"timestamp":"2026-12-02T14:00:00Z","type":"response_item","payload":{"type":"reasoning","summary":[]}}`,
		`{"timestamp":"2026-12-02T14:00:01Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"}}`,
		`{"timestamp":"2026-12-02T14:00:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"a.txt\n"}}`,
		`{"timestamp":"2026-12-02T14:00:03Z","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]}}`,
		`{"timestamp":"2026-12-02T14:00:04Z","type":"event_msg","payload":{"type":"agent_message","message":"dup"}}`,
		`{"timestamp":"2026-12-02T14:00:05Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}`,
	}, "\n")
	got, err := New(Options{}).ParseTranscript(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, role, text string }{
		{"call_1", ptyapi.RoleTool, `shell {"command":["ls"]}`},
		{"call_1:output", ptyapi.RoleTool, "a.txt"},
		{"", ptyapi.RoleAssistant, "done"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i, w := range want {
		if (w.id != "" && !strings.HasPrefix(got[i].ID, w.id+":")) || got[i].Role != w.role || got[i].Text != w.text {
			t.Errorf("entry %d = %+v; want %+v", i, got[i], w)
		}
	}
	if !strings.HasPrefix(got[2].ID, "line-") {
		t.Errorf("id-less item got id %q, want a line hash", got[2].ID)
	}
	again, _ := New(Options{}).ParseTranscript(strings.NewReader(in))
	if again[2].ID != got[2].ID {
		t.Error("line-hash id not stable across re-reads")
	}
}

// approved-command.jsonl is a real rollout: the fake provider asked for an
// exec_command needing approval, the user approved it, Codex ran it and replied.
func TestParseTranscriptCapturedToolCall(t *testing.T) {
	data, err := os.ReadFile("testdata/sessions/approved-command.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got, err := New(Options{}).ParseTranscript(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ role, prefix string }{
		{ptyapi.RoleUser, "please make a file"},
		{ptyapi.RoleTool, `exec_command {"cmd":"touch /tmp/cap-codex-perm/made-by-tool"`},
		{ptyapi.RoleTool, "Chunk ID:"},
		{ptyapi.RoleAssistant, "echo: please make a file"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i, w := range want {
		if got[i].Role != w.role || !strings.HasPrefix(got[i].Text, w.prefix) {
			t.Errorf("entry %d = %s %q; want %s %q…", i, got[i].Role, got[i].Text, w.role, w.prefix)
		}
	}
	if !strings.HasPrefix(got[2].ID, "fco_") {
		t.Errorf("tool output id %q, want the item's own id", got[2].ID)
	}
}
