package fake

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/fake/sessionstore"
	"aicli.dev/aicli/guest/ptyapi"
)

func screen(lines ...string) ptyapi.Screen {
	return ptyapi.Screen{Cols: 80, Rows: len(lines), Lines: lines}
}

func TestClassify(t *testing.T) {
	a := New(Options{})
	cases := []struct {
		name  string
		scr   ptyapi.Screen
		want  ptyapi.ExecutionStatus
		known bool
	}{
		{"idle", screen("fake cli", "", "> ", "? for shortcuts            cols=80 rows=4"), ptyapi.StatusIdle, true},
		{"idle with typed text", screen("> half typed", "? for shortcuts"), ptyapi.StatusIdle, true},
		{"busy wins over the prompt", screen("⠋ Working… (esc to interrupt)", "> ", "? for shortcuts"), ptyapi.StatusBusy, true},
		{"permission wins over everything", screen("Do you want to proceed? (y/n)", "⠋ Working… (esc to interrupt)", "> ", "? for shortcuts"), ptyapi.StatusWaitingForInput, true},
		{"prompt without footer is not idle", screen("> "), "", false},
		{"blank", screen("", ""), "", false},
		{"a reply quoting the prompt is not idle", screen("user: > hi"), "", false},
	}
	for _, c := range cases {
		got, ok := a.Classify(c.scr)
		if got != c.want || ok != c.known {
			t.Errorf("%s: got %q,%v want %q,%v", c.name, got, ok, c.want, c.known)
		}
	}
}

func TestLaunch(t *testing.T) {
	a := New(Options{Binary: "/opt/aicli/bin/aicli-fake-cli", ExtraArgs: []string{"--alt-screen"}})
	sid := "6f1c1a40-6c43-4a8b-9c77-2b5c0c0f7d10"
	cases := []struct {
		name     string
		req      ptyapi.StartRequest
		wantArgs []string
		resumed  bool
	}{
		{"preassigned", ptyapi.StartRequest{SessionID: sid, Model: "m1", Args: []string{"--x"}},
			[]string{"--alt-screen", "--model", "m1", "--session-id", sid, "--x"}, false},
		{"resume", ptyapi.StartRequest{ResumeSession: sid}, []string{"--alt-screen", "--resume", sid}, true},
	}
	for _, c := range cases {
		l, err := a.Launch(harness.LaunchRequest{StartRequest: c.req})
		if err != nil {
			t.Fatal(err)
		}
		if l.Path != "/opt/aicli/bin/aicli-fake-cli" || !reflect.DeepEqual(l.Args, c.wantArgs) || l.Resumed != c.resumed || l.SessionID != sid {
			t.Errorf("%s: %+v", c.name, l)
		}
	}
	l, err := a.Launch(harness.LaunchRequest{})
	if err != nil || l.SessionID == "" || l.Args[len(l.Args)-1] != l.SessionID {
		t.Fatalf("fresh launch without id: %+v %v", l, err)
	}
	if _, err := a.Launch(harness.LaunchRequest{StartRequest: ptyapi.StartRequest{ResumeSession: "../../etc"}}); !errors.Is(err, ptyapi.ErrInvalidArgument) {
		t.Fatalf("bad resume id: %v", err)
	}
}

func TestFormatMessageIsBracketedPasteThenEnter(t *testing.T) {
	chunks := New(Options{}).FormatMessage("a\nb")
	if len(chunks) != 2 || string(chunks[0].Data) != "\x1b[200~a\nb\x1b[201~" || string(chunks[1].Data) != "\r" || chunks[0].Pause <= 0 {
		t.Fatalf("chunks %+v", chunks)
	}
}

func TestTranscriptAndDiscovery(t *testing.T) {
	home := t.TempDir()
	a := New(Options{})
	before := time.Now().Add(-time.Second)
	sid := "0d8f2b1e-8a55-4f0e-b0f4-6a2f8d3c9e71"
	path, err := a.SessionFile(home, "/w", sid)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := a.DiscoverSession(home, "/w", before); ok {
		t.Fatal("discovered a session in an empty store")
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	recs := []sessionstore.Record{
		{Type: "user", UUID: "u1", SessionID: sid, Timestamp: now, Turn: 1,
			Message: sessionstore.Message{Role: "user", Content: []sessionstore.Content{{Type: "text", Text: "hi"}}}},
		{Type: "assistant", UUID: "a1", ParentUUID: "u1", SessionID: sid, Timestamp: now, Turn: 1, RequestID: "req_1",
			Message: sessionstore.Message{ID: "msg_1", Role: "assistant", Model: "fake-model",
				Content: []sessionstore.Content{{Type: "text", Text: "fake[turn 1]: hi"}},
				Usage:   &sessionstore.Usage{InputTokens: 1, OutputTokens: 5}}},
	}
	for _, r := range recs {
		if err := sessionstore.Append(path, r); err != nil {
			t.Fatal(err)
		}
	}
	id, ok, err := a.DiscoverSession(home, "/w", before)
	if err != nil || !ok || id != sid {
		t.Fatalf("discover: %q %v %v", id, ok, err)
	}
	if dir := a.SessionStoreDir(home, "/w"); filepath.Dir(path) != dir {
		t.Fatalf("store dir %s vs file %s", dir, path)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := a.ParseTranscript(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []harness.TranscriptEntry{
		{TranscriptEntry: ptyapi.TranscriptEntry{ID: "u1", Role: ptyapi.RoleUser, Text: "hi", Timestamp: now}},
		{TranscriptEntry: ptyapi.TranscriptEntry{ID: "a1", Role: ptyapi.RoleAssistant, Text: "fake[turn 1]: hi", Timestamp: now},
			MessageID: "msg_1", RequestID: "req_1", Model: "fake-model"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("transcript\n got %+v\nwant %+v", got, want)
	}
	// A torn last line (crash mid-write) is ignored; a torn middle line is an error.
	if _, err := a.ParseTranscript(strings.NewReader(`{"type":"user","uuid":"x"}` + "\n" + `{"type":"assi`)); err != nil {
		t.Fatalf("torn tail: %v", err)
	}
	if _, err := a.ParseTranscript(strings.NewReader(`{"type":` + "\n" + `{"type":"user"}` + "\n")); err == nil {
		t.Fatal("torn middle line accepted")
	}
}

func TestQuotaLine(t *testing.T) {
	q := New(Options{}).Quota(screen("? for shortcuts  quota tokens 120/5000 (5h) · cols=80 rows=24"))
	if len(q) != 1 || q[0].Current != 120 || q[0].Max != 5000 || q[0].Window != "5h" || q[0].Unit != "tokens" {
		t.Fatalf("quota %+v", q)
	}
	if q := New(Options{}).Quota(screen("> ", "? for shortcuts")); q != nil {
		t.Fatalf("quota without a quota line: %+v", q)
	}
}

func TestRegistry(t *testing.T) {
	r, err := harness.NewRegistry(New(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Lookup("fake"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Lookup("claude"); !errors.Is(err, ptyapi.ErrUnknownHarness) {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := harness.NewRegistry(New(Options{}), New(Options{})); err == nil {
		t.Fatal("duplicate registration accepted")
	}
}
