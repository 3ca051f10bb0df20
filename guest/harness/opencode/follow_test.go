package opencode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// storeFixture is a real opencode.db (OpenCode 1.18.33): three turns, then
// "opencode --session <id>" and a fourth, in session storeSessionID.
const (
	storeFixture   = "ocdb/testdata/three-turns-resumed.db"
	storeSessionID = "ses_dc8c62f3dffe000xvS6tpyotXC"
)

func TestFollowStoreFollowsTheRealDatabase(t *testing.T) {
	var a harness.Adapter = New(Options{})
	sf, ok := a.(harness.StoreFollower)
	if !ok {
		t.Fatal("the opencode adapter does not implement harness.StoreFollower")
	}
	home := t.TempDir()
	var (
		mu  sync.Mutex
		sid string // not discovered yet
		got []ptyapi.TranscriptEntry
	)
	current := func() string { mu.Lock(); defer mu.Unlock(); return sid }
	entries := func() []ptyapi.TranscriptEntry {
		mu.Lock()
		defer mu.Unlock()
		return append([]ptyapi.TranscriptEntry(nil), got...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- sf.FollowStore(ctx, home, "/work", current, func(e ptyapi.TranscriptEntry) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, e)
			return nil
		})
	}()

	// The database appears where OpenCode keeps it, then the session is discovered.
	b, err := os.ReadFile(storeFixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(DataDir(home), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(DataDir(home), "opencode.db"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	sid = storeSessionID
	mu.Unlock()

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
	deadline := time.Now().Add(10 * time.Second)
	for len(entries()) < len(want) {
		if time.Now().After(deadline) {
			t.Fatalf("followed %d entries, want %d: %+v", len(entries()), len(want), entries())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Several more polls bring nothing new: each entry is followed once.
	time.Sleep(3 * StorePoll)
	es := entries()
	if len(es) != len(want) {
		t.Fatalf("followed %d entries, want %d: %+v", len(es), len(want), es)
	}
	ids := map[string]bool{}
	for i, w := range want {
		e := es[i]
		if e.Role != w.role || e.Text != w.text || e.ID == "" || e.Timestamp.IsZero() || ids[e.ID] {
			t.Errorf("entry %d = %+v; want %s %q with a fresh id and a timestamp", i, e, w.role, w.text)
		}
		ids[e.ID] = true
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("FollowStore ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("FollowStore did not end with its context")
	}
}

func TestFollowStoreReturnsTheCallbacksError(t *testing.T) {
	home := t.TempDir()
	b, err := os.ReadFile(storeFixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(DataDir(home), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(DBPath(home), b, 0o600); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("enough")
	n := 0
	err = New(Options{}).FollowStore(context.Background(), home, "", func() string { return storeSessionID },
		func(ptyapi.TranscriptEntry) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("FollowStore = %v after %d entries, want the callback's error after one", err, n)
	}
}
