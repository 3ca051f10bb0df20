package opencode

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// three-turns-resumed.jsonl is ocdb's dump of a real OpenCode 1.18.33 session
// (ocdb/testdata/three-turns-resumed.db): three turns, a native resume, a fourth.
func TestParseTranscriptCapturedSession(t *testing.T) {
	data, err := os.ReadFile("testdata/sessions/three-turns-resumed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{})
	got, err := a.ParseTranscript(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, role, text string }{
		{"prt_23739d226001j5j5Lyl9wv3Ml4", ptyapi.RoleUser, "hello there"},
		{"prt_23739f488001NNH3XCZN9t6J71", ptyapi.RoleAssistant, "echo: hello there"},
		{"prt_23739f7bd001kBOappoHg26uJO", ptyapi.RoleUser, "please stream a longer answer slowly now with many words in it"},
		{"prt_23739f8c8001R5vGFnLhrS4Ma1", ptyapi.RoleAssistant,
			"echo: please stream a longer answer slowly now with many words in it"},
		{"prt_2373a013b001WxnuhBzqc3QifM", ptyapi.RoleUser, "third message"},
		{"prt_2373a024e001Aog2utlJoPhRxW", ptyapi.RoleAssistant, "echo: third message"},
		{"prt_2373a3ccc001XUi1B7FJgZZT5M", ptyapi.RoleUser, "after resume"},
		{"prt_2373a55f3001qvCOhnUmMgxfAb", ptyapi.RoleAssistant, "echo: after resume"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries: %+v", len(got), got)
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.id || g.Role != w.role || g.Text != w.text || g.Timestamp.IsZero() {
			t.Errorf("entry %d = %s %s %q; want %+v", i, g.ID, g.Role, g.Text, w)
		}
	}
	if got[1].Model != "claude-sonnet-4-5" || got[1].MessageID != "msg_23739d34e001cOL6767mzECo5d" {
		t.Errorf("assistant provenance %+v", got[1])
	}
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
}

// The capture had no tool calls; these rows follow OpenCode's part format
// (a tool part with its state, a synthetic text part, a reasoning part).
func TestParseTranscriptToolParts(t *testing.T) {
	asst := `"message":{"id":"msg_2","session_id":"ses_1","time_created":1,"data":{"role":"assistant","modelID":"m","time":{"completed":2}}}`
	in := strings.Join([]string{
		`{` + asst + `,"part":{"id":"prt_1","message_id":"msg_2","time_created":1,"data":{"type":"reasoning","text":"hmm"}}}`,
		`{` + asst + `,"part":{"id":"prt_2","message_id":"msg_2","time_created":1,"data":{"type":"tool","tool":"bash","callID":"c1","state":{"status":"completed","input":{"command":"ls"},"output":"a.txt\n"}}}}`,
		`{` + asst + `,"part":{"id":"prt_3","message_id":"msg_2","time_created":1,"data":{"type":"text","text":"injected","synthetic":true}}}`,
		`{` + asst + `,"part":{"id":"prt_4","message_id":"msg_2","time_created":1,"data":{"type":"tool","tool":"read","state":{"status":"error","input":{"filePath":"/x"},"error":"not found"}}}}`,
	}, "\n")
	got, err := New(Options{}).ParseTranscript(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, text string }{
		{"prt_2", `bash {"command":"ls"}`},
		{"prt_2:output", "a.txt"},
		{"prt_4", `read {"filePath":"/x"}`},
		{"prt_4:output", "not found"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i, w := range want {
		if got[i].ID != w.id || got[i].Role != ptyapi.RoleTool || got[i].Text != w.text {
			t.Errorf("entry %d = %+v; want %+v", i, got[i], w)
		}
	}
	if _, err := New(Options{}).ParseTranscript(strings.NewReader(`{"part":{}}`)); err == nil {
		t.Error("a line without ids parsed without error")
	}
	// The database file's own bytes (what a file follower would feed): nothing, quietly.
	db, err := os.ReadFile("ocdb/testdata/three-turns-resumed.db")
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range bytes.SplitAfter(db, []byte("\n")) {
		if es, err := New(Options{}).ParseTranscript(bytes.NewReader(chunk)); err != nil || len(es) != 0 {
			t.Fatalf("database bytes parsed as %d entries, %v", len(es), err)
		}
	}
}

func TestMessageComplete(t *testing.T) {
	cases := []struct {
		data string
		want bool
	}{
		{`{"role":"user"}`, true},
		{`{"role":"assistant","time":{"created":1}}`, false},
		{`{"role":"assistant","time":{"created":1,"completed":2}}`, true},
		{`{"role":"assistant","time":{"created":1},"error":{"name":"APIError"}}`, true},
		{`not json`, false},
	}
	for _, c := range cases {
		if got := MessageComplete([]byte(c.data)); got != c.want {
			t.Errorf("MessageComplete(%s) = %v, want %v", c.data, got, c.want)
		}
	}
}
