package ptyclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/ptyclient"
	"aicli.dev/aicli/guest/server"
)

// A real host's status changes reach a remote watcher in order: STARTING
// before the start, then the start, IDLE, BUSY from the acceptance of a
// message and IDLE after its reply; ending the context ends the watch.
func TestWatchStatusRoundTrip(t *testing.T) {
	c, _ := remote(t)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var seen []ptyapi.StatusInfo
	done := make(chan error, 1)
	go func() {
		done <- c.WatchStatus(ctx, func(info ptyapi.StatusInfo) error {
			mu.Lock()
			seen = append(seen, info)
			mu.Unlock()
			return nil
		})
	}()
	last := func() ptyapi.StatusInfo {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			return ptyapi.StatusInfo{}
		}
		return seen[len(seen)-1]
	}
	eventually(t, "the current status first", func() bool { return last().Status == ptyapi.StatusStarting })
	if _, err := c.Start(context.Background(), ptyapi.StartRequest{Harness: "fake",
		Env: map[string]string{"AICLI_FAKE_DELAY": "200ms"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "IDLE pushed", func() bool { return last().Status == ptyapi.StatusIdle })
	if st := last(); !st.Alive || st.Harness != "fake" || st.SessionID == "" {
		t.Fatalf("pushed %+v", st)
	}
	mu.Lock()
	mark := len(seen)
	mu.Unlock()
	if err := c.SendMessage(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "reply on screen", screenHas(t, c, "fake[turn 1]: hello"))
	eventually(t, "IDLE pushed again", func() bool { return last().Status == ptyapi.StatusIdle })
	mu.Lock()
	after := append([]ptyapi.StatusInfo(nil), seen[mark:]...)
	mu.Unlock()
	if after[0].Status != ptyapi.StatusBusy || after[0].PendingMessages == 0 {
		t.Fatalf("first status pushed after the send: %+v, want BUSY with the message pending", after[0])
	}
	for _, st := range after[:len(after)-1] {
		if st.Status != ptyapi.StatusBusy {
			t.Fatalf("statuses pushed during the turn: %+v, want only BUSY before the final IDLE", after)
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("watch ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end with its context")
	}
}

// scriptedWatcher is a seam fake: WatchStatus pushes fixed statuses, then
// ends with end.
type scriptedWatcher struct {
	ptyapi.PTY
	push []ptyapi.StatusInfo
	end  error
}

func (s scriptedWatcher) WatchStatus(ctx context.Context, fn func(ptyapi.StatusInfo) error) error {
	for _, st := range s.push {
		if err := fn(st); err != nil {
			return err
		}
	}
	return s.end
}

func TestWatchStatusEndIsReportedAcrossTheWire(t *testing.T) {
	two := []ptyapi.StatusInfo{{Status: ptyapi.StatusIdle, Alive: true}, {Status: ptyapi.StatusBusy, Alive: true, PendingMessages: 1}}
	for _, c := range []struct {
		name string
		pty  ptyapi.PTY
		push []ptyapi.StatusInfo
		got  int
		want error
	}{
		{"clean end", scriptedWatcher{push: two}, two, 2, nil},
		{"cut after two", scriptedWatcher{push: two, end: ptyapi.ErrExited}, two, 2, ptyapi.ErrExited},
		{"refused at once", scriptedWatcher{end: ptyapi.ErrNotStarted}, nil, 0, ptyapi.ErrNotStarted},
		{"not a watcher", streamPTY{}, nil, 0, ptyapi.ErrUnsupported},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(server.Handler(c.pty))
			defer srv.Close()
			var got []ptyapi.StatusInfo
			err := ptyclient.New(srv.Client(), srv.URL).WatchStatus(context.Background(), func(st ptyapi.StatusInfo) error {
				got = append(got, st)
				return nil
			})
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("watch ended with %v, want %v", err, c.want)
			}
			if len(got) != c.got {
				t.Fatalf("got %d statuses, want %d: %+v", len(got), c.got, got)
			}
			for i := range got {
				if got[i].Status != c.push[i].Status || got[i].PendingMessages != c.push[i].PendingMessages {
					t.Fatalf("status %d: %+v, want %+v", i, got[i], c.push[i])
				}
			}
		})
	}
}

// A guest from before the status stream answers 404: that is unsupported,
// so the caller can fall back to reading Status.
func TestWatchStatusOfAnOlderGuestIsUnsupported(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	err := ptyclient.New(srv.Client(), srv.URL).WatchStatus(context.Background(), func(ptyapi.StatusInfo) error { return nil })
	if !errors.Is(err, ptyapi.ErrUnsupported) {
		t.Fatalf("watch against an older guest: %v", err)
	}
}
