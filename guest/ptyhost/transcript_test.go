package ptyhost

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"aicli.dev/aicli/guest/harness/fake/sessionstore"
	"aicli.dev/aicli/guest/ptyapi"
)

// follow runs FollowTranscript in the background, forwarding entries.
func follow(ctx context.Context, h *Host, stopAfter int) (<-chan ptyapi.TranscriptEntry, <-chan error) {
	entries := make(chan ptyapi.TranscriptEntry, 100)
	done := make(chan error, 1)
	errStop := errors.New("enough")
	n := 0
	go func() {
		done <- h.FollowTranscript(ctx, func(e ptyapi.TranscriptEntry) error {
			entries <- e
			n++
			if stopAfter > 0 && n >= stopAfter {
				return errStop
			}
			return nil
		})
	}()
	return entries, done
}

func next(t *testing.T, ch <-chan ptyapi.TranscriptEntry) ptyapi.TranscriptEntry {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no transcript entry")
	}
	return ptyapi.TranscriptEntry{}
}

func TestFollowTranscriptFromTheStartThenLive(t *testing.T) {
	e := newEnv(t)
	h := newHost(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A follow begun before Start waits for the CLI and then starts from the beginning.
	entries, done := follow(ctx, h, 0)
	sid := newSessionID()
	start(t, h, ptyapi.StartRequest{SessionID: sid})
	waitStatus(t, h, ptyapi.StatusIdle)
	if err := h.SendMessage(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, "fake[turn 1]: one")

	u, a := next(t, entries), next(t, entries)
	if u.Role != ptyapi.RoleUser || u.Text != "one" || u.ID == "" || u.Timestamp.IsZero() {
		t.Fatalf("first entry %+v", u)
	}
	if a.Role != ptyapi.RoleAssistant || a.Text != "fake[turn 1]: one" || a.ID == "" || a.ID == u.ID {
		t.Fatalf("second entry %+v", a)
	}
	// A malformed line in the store costs only itself.
	f, err := os.OpenFile(sessionstore.Path(e.home, sid), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("{not json\n")
	_ = f.Close()
	if err := h.SendMessage(ctx, "two\nlines"); err != nil {
		t.Fatal(err)
	}
	if u2 := next(t, entries); u2.Text != "two\nlines" {
		t.Fatalf("live user entry %+v", u2)
	}
	if a2 := next(t, entries); a2.Text != "fake[turn 2]: two\nlines" {
		t.Fatalf("live assistant entry %+v", a2)
	}
	select {
	case extra := <-entries:
		t.Fatalf("unexpected entry %+v", extra)
	case <-time.After(3 * TranscriptPoll):
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("follow ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end with its context")
	}
}

func TestFollowTranscriptStopsOnCallbackErrorAndOutlivesTheCLI(t *testing.T) {
	h := newHost(t, newEnv(t))
	start(t, h, ptyapi.StartRequest{})
	waitStatus(t, h, ptyapi.StatusIdle)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, m := range []string{"a", "b"} {
		if err := h.SendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	waitScreen(t, h, "fake[turn 2]: b")
	_, done := follow(ctx, h, 3)
	select {
	case err := <-done:
		if err == nil || err.Error() != "enough" {
			t.Fatalf("follow ended with %v, want the callback's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not stop on the callback's error")
	}

	if err := h.SendMessage(ctx, "!crash"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, h, ptyapi.StatusExited)
	entries, done := follow(ctx, h, 0)
	for i := 0; i < 5; i++ { // a, fake a, b, fake b, !crash
		next(t, entries)
	}
	select {
	case err := <-done:
		t.Fatalf("follow of an exited CLI returned %v before its context ended", err)
	case <-time.After(3 * TranscriptPoll):
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("follow ended with %v", err)
	}
}
