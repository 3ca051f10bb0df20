package gemini

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// two-turns-resumed.jsonl is a real Gemini CLI 0.61.0 chat file: two turns
// against the fake provider, then "gemini --resume <id>" (which appends a
// "$set" of the whole message list) and a third turn.
func TestParseTranscriptCapturedSession(t *testing.T) {
	data, err := os.ReadFile("testdata/sessions/two-turns-resumed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{})
	got, err := a.ParseTranscript(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// Distinct entries in first-seen order (the resume's "$set" repeats the
	// earlier ones under the same ids; the guest's follower dedupes by id).
	seen := map[string]bool{}
	var uniq []harness.TranscriptEntry
	for _, e := range got {
		if !seen[e.ID] {
			seen[e.ID] = true
			uniq = append(uniq, e)
		}
	}
	want := []struct{ id, role, text string }{
		{"bc8e3d87-c387-4b5f-be92-7021ccc0ed8b", ptyapi.RoleUser, "hello there"},
		{"82aced7c-1433-44f0-b89a-3afb501da8b7", ptyapi.RoleAssistant, "echo: hello there"},
		{"93e5b3a3-3c2d-44be-b7eb-8e73bb77786e", ptyapi.RoleUser,
			"please stream a longer answer slowly now with many words in it"},
		{"5390ffff-5d71-45ef-b5ed-a86329dbd4ea", ptyapi.RoleAssistant,
			"echo: please stream a longer answer slowly now with many words in it"},
		{"4e1c0c5a-0b02-45ca-b3df-471754b6c46b", ptyapi.RoleUser, "after resume"},
		{"b251593f-f9b2-4772-b844-84046ce76770", ptyapi.RoleAssistant, "echo: after resume"},
	}
	if len(uniq) != len(want) {
		t.Fatalf("got %d distinct entries, want %d: %+v", len(uniq), len(want), uniq)
	}
	for i, w := range want {
		g := uniq[i]
		if g.ID != w.id || g.Role != w.role || g.Text != w.text || g.Timestamp.IsZero() {
			t.Errorf("entry %d = %s %s %q %v; want %+v", i, g.ID, g.Role, g.Text, g.Timestamp, w)
		}
	}
	if uniq[1].Model != "gemini-2.5-pro" {
		t.Errorf("assistant model = %q", uniq[1].Model)
	}

	// The guest feeds one line at a time: the concatenation must be the same.
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
		t.Fatalf("line by line: %d entries, whole file: %d", len(line), len(got))
	}
	for i := range got {
		if line[i].ID != got[i].ID || line[i].Text != got[i].Text {
			t.Errorf("line-by-line entry %d differs: %+v vs %+v", i, line[i], got[i])
		}
	}
}

// The capture had no tool calls; these lines follow the same record format
// (a model message carrying toolCalls with results, an info record).
func TestParseTranscriptToolCalls(t *testing.T) {
	in := strings.Join([]string{
		`{"id":"u1","timestamp":"2026-12-02T14:00:00Z","type":"user","content":[{"text":"list files"}]}`,
		`{"id":"g1","timestamp":"2026-12-02T14:00:01Z","type":"gemini","content":"Listing.","model":"m",` +
			`"toolCalls":[{"id":"run_shell_command-1","name":"run_shell_command","args":{"command":"ls"},` +
			`"status":"success","result":[{"functionResponse":{"id":"run_shell_command-1","name":"run_shell_command",` +
			`"response":{"output":"a.txt"}}}]}]}`,
		`{"id":"i1","timestamp":"2026-12-02T14:00:02Z","type":"info","content":"Request cancelled."}`,
		`{"$set":{"lastUpdated":"2026-12-02T14:00:02Z"}}`,
	}, "\n")
	got, err := New(Options{}).ParseTranscript(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, role, text string }{
		{"u1", ptyapi.RoleUser, "list files"},
		{"g1", ptyapi.RoleAssistant, "Listing."},
		{"run_shell_command-1", ptyapi.RoleTool, `run_shell_command {"command":"ls"}`},
		{"run_shell_command-1:result", ptyapi.RoleTool, "a.txt"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i, w := range want {
		if got[i].ID != w.id || got[i].Role != w.role || got[i].Text != w.text {
			t.Errorf("entry %d = %s %s %q; want %+v", i, got[i].ID, got[i].Role, got[i].Text, w)
		}
	}
	if _, err := New(Options{}).ParseTranscript(strings.NewReader("{not json\n")); err == nil {
		t.Error("a malformed line parsed without error")
	}
}
