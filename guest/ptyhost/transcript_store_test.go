package ptyhost

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/fake"
	"aicli.dev/aicli/guest/ptyapi"
)

// storeAdapter is the fake harness with a store follower of its own: it
// reports one entry per distinct session id it is given, naming the id, and
// never touches the fake's session files.
type storeAdapter struct {
	harness.Adapter
	mu            sync.Mutex
	home, workDir string
	calls         int
}

var _ harness.StoreFollower = (*storeAdapter)(nil)

func (a *storeAdapter) FollowStore(ctx context.Context, home, workDir string, sessionID func() string,
	fn func(ptyapi.TranscriptEntry) error) error {
	a.mu.Lock()
	a.home, a.workDir, a.calls = home, workDir, a.calls+1
	a.mu.Unlock()
	last := ""
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if sid := sessionID(); sid != "" && sid != last {
			last = sid
			if err := fn(ptyapi.TranscriptEntry{ID: "store:" + sid, Role: ptyapi.RoleUser, Text: "from store " + sid}); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func TestFollowTranscriptUsesTheAdaptersStoreFollower(t *testing.T) {
	e := newEnv(t)
	sa := &storeAdapter{}
	h := newHostWith(t, e, func(a *fake.Adapter) harness.Adapter { sa.Adapter = a; return sa })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	entries, done := follow(ctx, h, 0)
	sid := newSessionID()
	start(t, h, ptyapi.StartRequest{SessionID: sid})
	waitStatus(t, h, ptyapi.StatusIdle)
	if err := h.SendMessage(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, "fake[turn 1]: one")

	// The store follower's entry, and none of the session file's lines (the
	// fake CLI did write its JSONL store).
	if got := next(t, entries); got.ID != "store:"+sid || got.Text != "from store "+sid {
		t.Fatalf("entry %+v, want the store follower's", got)
	}
	select {
	case extra := <-entries:
		t.Fatalf("unexpected entry %+v (the file follower ran too?)", extra)
	case <-time.After(5 * TranscriptPoll):
	}
	sa.mu.Lock()
	home, workDir, calls := sa.home, sa.workDir, sa.calls
	sa.mu.Unlock()
	if home != e.home || workDir != e.work || calls != 1 {
		t.Fatalf("FollowStore called %d times with home %q workDir %q, want once with %q %q",
			calls, home, workDir, e.home, e.work)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("follow ended with %v", err)
	}

	// fn's error comes back as it is.
	_, done = follow(context.Background(), h, 1)
	if err := <-done; err == nil || err.Error() != "enough" {
		t.Fatalf("follow ended with %v, want the callback's error", err)
	}
}

// lateFileAdapter is the fake harness whose SessionFile names another path
// until the first few calls are over, like a CLI that names its file after
// the minute it first writes it.
type lateFileAdapter struct {
	harness.Adapter
	mu    sync.Mutex
	calls int
}

func (a *lateFileAdapter) SessionFile(home, workDir, sessionID string) (string, error) {
	a.mu.Lock()
	a.calls++
	n := a.calls
	a.mu.Unlock()
	if n <= 3 {
		return filepath.Join(home, "not-written-yet.jsonl"), nil
	}
	return a.Adapter.SessionFile(home, workDir, sessionID)
}

func TestFollowTranscriptResolvesAMissingFileAgain(t *testing.T) {
	e := newEnv(t)
	la := &lateFileAdapter{}
	h := newHostWith(t, e, func(a *fake.Adapter) harness.Adapter { la.Adapter = a; return la })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	entries, done := follow(ctx, h, 0)
	start(t, h, ptyapi.StartRequest{SessionID: newSessionID()})
	waitStatus(t, h, ptyapi.StatusIdle)
	if err := h.SendMessage(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if u := next(t, entries); u.Role != ptyapi.RoleUser || u.Text != "one" {
		t.Fatalf("first entry %+v", u)
	}
	if a := next(t, entries); a.Text != "fake[turn 1]: one" {
		t.Fatalf("second entry %+v", a)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("follow ended with %v", err)
	}
}
