package ocdb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"aicli.dev/aicli/guest/ptyapi"
)

// three-turns-resumed.db holds the session, message and part tables (schema
// and rows as OpenCode 1.18.33 wrote them) of a real session: three turns
// against the fake provider, then "opencode --session <id>" and a fourth.
const fixture = "testdata/three-turns-resumed.db"

const sessionID = "ses_dc8c62f3dffe000xvS6tpyotXC"

func openCopy(t *testing.T) (*DB, string) {
	t.Helper()
	b, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "opencode.db")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d, p
}

func TestDumpParsesIntoTheConversation(t *testing.T) {
	d, _ := openCopy(t)
	var buf bytes.Buffer
	n, err := d.Dump(context.Background(), sessionID, &buf)
	if err != nil || n != 16 {
		t.Fatalf("Dump = %d lines, %v", n, err)
	}
	got, err := Parse(&buf)
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
		{ptyapi.RoleUser, "after resume"},
		{ptyapi.RoleAssistant, "echo: after resume"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries: %+v", len(got), got)
	}
	for i, w := range want {
		if got[i].Role != w.role || got[i].Text != w.text || got[i].ID == "" || got[i].Timestamp.IsZero() {
			t.Errorf("entry %d = %+v; want %+v", i, got[i], w)
		}
	}
	if got[1].Model != "claude-sonnet-4-5" || got[1].MessageID == "" {
		t.Errorf("assistant provenance %+v", got[1])
	}
	if n, err := d.Dump(context.Background(), "ses_unknown000000000000000", &buf); n != 0 || err != nil {
		t.Fatalf("unknown session: %d %v", n, err)
	}
}

func TestSessions(t *testing.T) {
	d, _ := openCopy(t)
	ss, err := d.Sessions(context.Background(), "/tmp/i6g/capo2/work", time.Time{})
	if err != nil || len(ss) != 1 || ss[0].ID != sessionID || ss[0].TimeCreated.IsZero() {
		t.Fatalf("Sessions = %+v, %v", ss, err)
	}
	if ss, _ := d.Sessions(context.Background(), "/elsewhere", time.Time{}); len(ss) != 0 {
		t.Fatalf("other directory: %+v", ss)
	}
	if ss, _ := d.Sessions(context.Background(), "/tmp/i6g/capo2/work", time.Now()); len(ss) != 0 {
		t.Fatalf("since now: %+v", ss)
	}
}

// A reply still streaming: the dump stops before its message.
func TestDumpStopsAtIncompleteMessage(t *testing.T) {
	_, p := openCopy(t)
	// Make the last reply look unfinished (as OpenCode's row is while it
	// streams: no time.completed).
	rw, err := sql.Open("sqlite", "file:"+p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Exec(`UPDATE message SET data = json_remove(data, '$.time.completed')
		WHERE id = (SELECT max(id) FROM message)`); err != nil {
		t.Fatal(err)
	}
	_ = rw.Close()
	d, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var buf bytes.Buffer
	n, err := d.Dump(context.Background(), sessionID, &buf)
	if !errors.Is(err, ErrIncomplete) || n != 13 {
		t.Fatalf("Dump = %d, %v; want 13 lines and ErrIncomplete", n, err)
	}
}

func TestOpenMissing(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "none.db")); err == nil {
		t.Fatal("opened a database that does not exist")
	}
}
