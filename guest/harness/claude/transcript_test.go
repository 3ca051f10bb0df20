package claude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// two-turns.jsonl is a real Claude Code 2.1.332 session (two turns against the
// fake provider) with its lines over 4 KiB (system-prompt snapshots and request
// blobs, none a conversation line) removed to keep the fixture small.
func TestParseTranscriptCapturedSession(t *testing.T) {
	data, err := os.ReadFile("testdata/sessions/two-turns.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{})
	got, err := a.ParseTranscript(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, role, text string }{
		{"f18da6d9-94f9-4431-b9d4-14429af605ef", ptyapi.RoleUser, "hello there"},
		{"182eb529-142e-4b90-a6dc-5eb163fcc191", ptyapi.RoleAssistant, "echo: hello there"},
		{"2c8aee7f-78c8-4140-a299-339bf5a8bf67", ptyapi.RoleUser,
			"please stream a longer answer slowly now with many words in it"},
		{"8f43c8cd-44d0-4751-97c2-bd6d20bbb3d3", ptyapi.RoleAssistant,
			"echo: please stream a longer answer slowly now with many words in it"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.id || g.Role != w.role || g.Text != w.text {
			t.Errorf("entry %d = %s %s %q; want %s %s %q", i, g.ID, g.Role, g.Text, w.id, w.role, w.text)
		}
		if g.Timestamp.IsZero() {
			t.Errorf("entry %d has no timestamp", i)
		}
	}
	if got[1].Model != "claude-opus-4-6" || !strings.HasPrefix(got[1].MessageID, "msg_fake") {
		t.Errorf("assistant provenance = model %q message %q", got[1].Model, got[1].MessageID)
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

// The capture had no tool calls; these lines follow the same store format with
// tool_use / tool_result blocks, a system reminder, a thinking block and a meta line.
func TestParseTranscriptBlocks(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"assistant","uuid":"a1","timestamp":"2026-12-02T14:00:00Z","message":{"id":"m1","role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"Listing."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"user","uuid":"u1","timestamp":"2026-12-02T14:00:01Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a.txt"}]}]}}`,
		`{"type":"user","uuid":"u2","timestamp":"2026-12-02T14:00:02Z","message":{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"thanks"}]}}`,
		`{"type":"user","uuid":"u3","isMeta":true,"message":{"role":"user","content":"Caveat: local commands"}}`,
		`{"type":"user","uuid":"u4","message":{"role":"user","content":"<command-name>/model</command-name>"}}`,
		`{"type":"summary","summary":"x","leafUuid":"u2"}`,
	}, "\n")
	got, err := New(Options{}).ParseTranscript(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, role, text string }{
		{"a1", ptyapi.RoleAssistant, "Listing."},
		{"a1#1", ptyapi.RoleTool, `Bash {"command":"ls"}`},
		{"u1", ptyapi.RoleTool, "a.txt"},
		{"u2", ptyapi.RoleUser, "thanks"},
		{"u4", ptyapi.RoleSystem, "<command-name>/model</command-name>"},
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

// tool-call.jsonl is a real session: the fake provider answered with a Bash
// tool call, the user approved the permission prompt, the CLI ran it.
func TestParseTranscriptCapturedToolCall(t *testing.T) {
	data, err := os.ReadFile("testdata/sessions/tool-call.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got, err := New(Options{}).ParseTranscript(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ role, text string }{
		{ptyapi.RoleUser, "please make a file"},
		{ptyapi.RoleTool, `Bash {"command":"touch /tmp/cap-claude-perm/work/made-by-tool","description":"Create a file"}`},
		{ptyapi.RoleTool, "(Bash completed with no output)"},
		{ptyapi.RoleAssistant, "echo: please make a file"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i, w := range want {
		if got[i].Role != w.role || got[i].Text != w.text {
			t.Errorf("entry %d = %s %q; want %s %q", i, got[i].Role, got[i].Text, w.role, w.text)
		}
	}
}

// A multi-line message delivered by bracketed paste is stored wrapped in
// <pasted_content> (observed with Claude Code 2.1.332 in the real-CLI monitor
// spec); the entry is the pasted text, so attribution can match what was sent.
func TestParseTranscriptUnwrapsPastes(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"user","uuid":"u1","message":{"role":"user","content":"\n\n<pasted_content id=\"3f3f\">\n[Monitor trigger: attachment \"watch\"]\nExcerpts:\n#1 human: it panics\n</pasted_content id=\"3f3f\">\n"}}`,
		`{"type":"user","uuid":"u2","message":{"role":"user","content":[{"type":"text","text":"see <pasted_content id=\"a1\">\nline one\nline two\n</pasted_content id=\"a1\"> and <pasted_content id=\"b2\">x\ny</pasted_content id=\"b2\">"}]}}`,
		`{"type":"user","uuid":"u3","message":{"role":"user","content":"<pasted_content id=\"c3\">\nunclosed\n</pasted_content id=\"other\">"}}`,
		`{"type":"assistant","uuid":"a1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"<pasted_content id=\"d4\">\nquoted\n</pasted_content id=\"d4\">"}]}}`,
	}, "\n")
	got, err := New(Options{}).ParseTranscript(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"[Monitor trigger: attachment \"watch\"]\nExcerpts:\n#1 human: it panics",
		"see line one\nline two and x\ny",
		"<pasted_content id=\"c3\">\nunclosed\n</pasted_content id=\"other\">",
		"<pasted_content id=\"d4\">\nquoted\n</pasted_content id=\"d4\">", // the model's own text is left as it is
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i, w := range want {
		if got[i].Text != w {
			t.Errorf("entry %d = %q; want %q", i, got[i].Text, w)
		}
	}
}

// A framed delivery (a mail body whose later lines are indented so that none
// can start a header) keeps its indentation through the paste wrapping, so
// the entry is exactly what was sent and attribution matches it.
func TestParseTranscriptKeepsFramedIndentation(t *testing.T) {
	framed := "[Mail from agent \"planner\"]: done\n\n  [Mail from agent \"boss\"]: rotate the keys\n  last"
	line, err := json.Marshal(map[string]any{"type": "user", "uuid": "u1",
		"message": map[string]any{"role": "user", "content": "<pasted_content id=\"e5\">\n" + framed + "\n</pasted_content id=\"e5\">"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := New(Options{}).ParseTranscript(strings.NewReader(string(line)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Text != framed {
		t.Fatalf("entries %+v, want the framed text %q", got, framed)
	}
}
