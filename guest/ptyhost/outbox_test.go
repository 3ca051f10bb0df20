package ptyhost

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"aicli.dev/aicli/guest/harness/fake/sessionstore"
	"aicli.dev/aicli/guest/ptyapi"
)

// userTexts are the user turns the fake CLI recorded in its session store, in order.
func userTexts(t testing.TB, home, sid string) []string {
	t.Helper()
	recs, err := sessionstore.ReadFile(sessionstore.Path(home, sid))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		if r.Type == "user" {
			out = append(out, r.Text())
		}
	}
	return out
}

// killCLI ends the CLI as a container's death would: SIGKILL, no chance to flush anything.
func killCLI(t testing.TB, h *Host) {
	t.Helper()
	if err := syscall.Kill(-h.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the CLI did not die")
	}
}

// Messages accepted while the CLI was busy (queued in the guest's memory) outlive the guest: the next run of the
// session delivers them first, in order, and what the CLI had recorded is not delivered again.
func TestAcceptedMessagesOutliveTheGuest(t *testing.T) {
	e := newEnv(t)
	sid := newSessionID()
	h := newHost(t, e)
	start(t, h, ptyapi.StartRequest{SessionID: sid})
	waitStatus(t, h, ptyapi.StatusIdle)
	ctx := context.Background()
	for _, m := range []string{"first " + "!slow", "second", "third"} {
		if err := h.SendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	// The first turn lasts fake SlowDelay: the others wait in the queue when the guest dies.
	eventually(t, 10*time.Second, "the first message recorded", func() bool { return len(userTexts(t, e.home, sid)) == 1 })
	killCLI(t, h)
	_ = h.Close()
	if got := userTexts(t, e.home, sid); !slices.Equal(got, []string{"first !slow"}) {
		t.Fatalf("before the resume the store holds %q", got)
	}

	h2 := newHost(t, e)
	start(t, h2, ptyapi.StartRequest{ResumeSession: sid})
	want := []string{"first !slow", "second", "third"}
	eventually(t, 20*time.Second, "the queued messages delivered after the resume", func() bool {
		return slices.Equal(userTexts(t, e.home, sid), want)
	})
	waitStatus(t, h2, ptyapi.StatusIdle)
	if err := h2.SendMessage(ctx, "fourth"); err != nil {
		t.Fatal(err)
	}
	want = append(want, "fourth")
	eventually(t, 10*time.Second, "a new message after them", func() bool { return slices.Equal(userTexts(t, e.home, sid), want) })
	// Everything was recorded: the outbox is gone, and a third run delivers nothing again.
	eventually(t, 5*time.Second, "the outbox emptied", func() bool {
		_, err := os.Stat(filepath.Join(e.home, outboxFile))
		return os.IsNotExist(err)
	})
	if err := h2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	h3 := newHost(t, e)
	start(t, h3, ptyapi.StartRequest{ResumeSession: sid})
	waitStatus(t, h3, ptyapi.StatusIdle)
	time.Sleep(500 * time.Millisecond)
	if got := userTexts(t, e.home, sid); !slices.Equal(got, want) {
		t.Fatalf("after a clean run and a resume the store holds %q, want %q", got, want)
	}
}

// writeOutbox writes an outbox file as a guest that died would have left it.
func writeOutbox(t testing.TB, home string, recs ...outboxRecord) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(home, outboxDir), 0o700); err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, r := range recs {
		line, _ := json.Marshal(r)
		b = append(append(b, line...), '\n')
	}
	if err := os.WriteFile(filepath.Join(home, outboxFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A message typed and recorded just before the guest died (its done mark never written) is not delivered again;
// one typed but not recorded, and one never typed, are. A run of another session delivers none of them.
func TestOutboxRecoveryReadsTheSessionStore(t *testing.T) {
	e := newEnv(t)
	sid := newSessionID()
	h := newHost(t, e)
	start(t, h, ptyapi.StartRequest{SessionID: sid})
	waitStatus(t, h, ptyapi.StatusIdle)
	if err := h.SendMessage(context.Background(), "alpha"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "alpha recorded", func() bool { return len(userTexts(t, e.home, sid)) == 1 })
	waitStatus(t, h, ptyapi.StatusIdle)
	if err := h.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = h.Close()
	// As a guest killed between typing alpha and marking it done leaves it; beta was typed, never recorded.
	writeOutbox(t, e.home,
		outboxRecord{Op: opSession, Session: sid},
		outboxRecord{Op: opAccept, ID: 1, Text: "alpha"}, outboxRecord{Op: opTyped, ID: 1, Before: 0},
		outboxRecord{Op: opAccept, ID: 2, Text: "beta"}, outboxRecord{Op: opTyped, ID: 2, Before: 2},
		outboxRecord{Op: opAccept, ID: 3, Text: "gamma"},
	)
	other := newEnv(t)
	writeOutbox(t, other.home, outboxRecord{Op: opSession, Session: sid}, outboxRecord{Op: opAccept, ID: 1, Text: "delta"})

	h2 := newHost(t, e)
	start(t, h2, ptyapi.StartRequest{ResumeSession: sid})
	want := []string{"alpha", "beta", "gamma"}
	eventually(t, 20*time.Second, "beta and gamma delivered once", func() bool { return slices.Equal(userTexts(t, e.home, sid), want) })

	// Another session of the same home drops what the outbox held.
	sid2 := newSessionID()
	h3 := newHost(t, other)
	start(t, h3, ptyapi.StartRequest{SessionID: sid2})
	waitStatus(t, h3, ptyapi.StatusIdle)
	time.Sleep(500 * time.Millisecond)
	if got := userTexts(t, other.home, sid2); len(got) != 0 {
		t.Fatalf("a fresh session got %q", got)
	}
	if _, err := os.Stat(filepath.Join(other.home, outboxFile)); !os.IsNotExist(err) {
		t.Fatalf("the other session's outbox is still there: %v", err)
	}
	time.Sleep(500 * time.Millisecond)
	if got := userTexts(t, e.home, sid); !slices.Equal(got, want) {
		t.Fatalf("store %q, want %q", got, want)
	}
}

func TestUnrecorded(t *testing.T) {
	// The store: user "yes", agent, user "go on", agent.
	users := []indexedText{{0, "yes"}, {2, "go on\r\n"}}
	for _, c := range []struct {
		name string
		prev []*outMsg
		want []uint64
	}{
		{"never typed", []*outMsg{{id: 1, text: "yes"}}, []uint64{1}},
		{"typed and recorded", []*outMsg{{id: 1, text: "go on", typed: true, before: 2}}, nil},
		{"recorded before it was typed is another message", []*outMsg{{id: 1, text: "yes", typed: true, before: 1}}, []uint64{1}},
		{"each entry stands for one message", []*outMsg{{id: 1, text: "yes", typed: true}, {id: 2, text: "yes", typed: true}}, []uint64{2}},
		{"in order", []*outMsg{{id: 1, text: "go on", typed: true}, {id: 2, text: "yes", typed: true}, {id: 3, text: "x"}}, []uint64{2, 3}},
	} {
		var got []uint64
		for _, m := range unrecorded(c.prev, users) {
			got = append(got, m.id)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: unrecorded %v, want %v", c.name, got, c.want)
		}
	}
}
