package ocdb

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/guest/harness"
)

// collector gathers followed entries.
type collector struct {
	mu sync.Mutex
	es []harness.TranscriptEntry
}

func (c *collector) add(e harness.TranscriptEntry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.es = append(c.es, e)
	return nil
}

func (c *collector) texts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.es))
	for i, e := range c.es {
		out[i] = e.Text
	}
	return out
}

func waitLen(t *testing.T, c *collector, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(c.texts()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("followed %d entries, want %d: %q", len(c.texts()), n, c.texts())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFollowFromStartThenLive(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "opencode.db")
	var mu sync.Mutex
	sid := "" // not discovered yet
	current := func() string { mu.Lock(); defer mu.Unlock(); return sid }
	ctx, cancel := context.WithCancel(context.Background())
	c := &collector{}
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, p, current, 10*time.Millisecond, c.add) }()

	// The database appears, then the session id is discovered.
	b, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	sid = sessionID
	mu.Unlock()
	waitLen(t, c, 8)

	// OpenCode starts a reply (no completion time yet) and streams text into it.
	// The fixture is not in WAL mode, so a write waits out the follower's
	// read lock as OpenCode's own writes would.
	rw, err := sql.Open("sqlite", "file:"+p+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := rw.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO message VALUES ('msg_zz1', ?, 1, 1, '{"role":"user","time":{"created":1}}')`, sessionID)
	exec(`INSERT INTO part VALUES ('prt_zz1', 'msg_zz1', ?, 1, 1, '{"type":"text","text":"one more"}')`, sessionID)
	exec(`INSERT INTO message VALUES ('msg_zz2', ?, 2, 2, '{"role":"assistant","modelID":"m","time":{"created":2}}')`, sessionID)
	exec(`INSERT INTO part VALUES ('prt_zz2', 'msg_zz2', ?, 2, 2, '{"type":"text","text":"echo: one"}')`, sessionID)
	waitLen(t, c, 9)
	time.Sleep(50 * time.Millisecond) // several polls: the unfinished reply must not be followed
	if got := c.texts(); len(got) != 9 || got[8] != "one more" {
		t.Fatalf("after the unfinished reply: %q", got)
	}
	exec(`UPDATE part SET data = '{"type":"text","text":"echo: one more"}' WHERE id = 'prt_zz2'`)
	exec(`UPDATE message SET data = '{"role":"assistant","modelID":"m","time":{"created":2,"completed":3}}' WHERE id = 'msg_zz2'`)
	waitLen(t, c, 10)
	if got := c.texts(); got[9] != "echo: one more" {
		t.Fatalf("finished reply followed as %q", got[9])
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow returned %v", err)
	}
	// Every entry once.
	seen := map[string]bool{}
	for _, e := range c.es {
		if seen[e.ID] {
			t.Fatalf("entry %s followed twice", e.ID)
		}
		seen[e.ID] = true
	}
}

func TestFollowStopsOnCallbackError(t *testing.T) {
	stop := errors.New("enough")
	err := Follow(context.Background(), fixture, func() string { return sessionID }, 10*time.Millisecond,
		func(harness.TranscriptEntry) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("Follow = %v, want the callback's error", err)
	}
}
