package ptyhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/guest/ptyapi"
)

// numberedOutput writes n numbered lines to a file and returns a shell script
// that prints it once "go" is typed.
func numberedOutput(t *testing.T, n int) (script string, size int) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %07d the quick brown fox jumps over the lazy dog\n", i)
	}
	file := filepath.Join(t.TempDir(), "out.txt")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return "read go; cat " + file + "; read end", b.Len()
}

// A burst far larger than the emulator's backlog reaches the subscriber whole
// and in order, and the screen ends up showing the burst's last lines.
func TestBurstReachesSubscriberAndScreenCatchesUp(t *testing.T) {
	const lines = 150000 // ~8.5 MiB
	script, size := numberedOutput(t, lines)
	h := rawHost(t, "/bin/sh", "-c", script)
	stream, err := h.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SendString(context.Background(), "go\r"); err != nil {
		t.Fatal(err)
	}
	got, next := 0, 0
	var carry []byte
	buf := make([]byte, 64<<10)
	want := fmt.Sprintf("line %07d", lines-1)
	for next < lines {
		n, err := stream.Read(buf)
		got += n
		data := append(carry, buf[:n]...)
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			l := strings.TrimRight(string(data[:i]), "\r")
			data = data[i+1:]
			if !strings.HasPrefix(l, "line ") {
				continue // the echo of "go"
			}
			if exp := fmt.Sprintf("line %07d", next); !strings.HasPrefix(l, exp) {
				t.Fatalf("stream out of order: %q, want %s", l, exp)
			}
			next++
		}
		carry = append(carry[:0], data...)
		if err != nil {
			t.Fatalf("stream ended after %d of ~%d bytes: %v", got, size, err)
		}
	}
	waitScreen(t, h, want)
	s, err := h.RenderScreen(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	prev := fmt.Sprintf("line %07d", lines-2)
	for y, l := range s.Lines {
		if strings.HasPrefix(l, want) {
			if y == 0 || !strings.HasPrefix(s.Lines[y-1], prev) {
				t.Fatalf("line above the last is not %s:\n%s", prev, strings.Join(s.Lines, "\n"))
			}
			return
		}
	}
}

// A subscriber that reads slowly but steadily paces the CLI instead of being
// cut off, even with a backlog bound far below the output size.
func TestSteadySlowSubscriberIsPacedNotCut(t *testing.T) {
	script, size := numberedOutput(t, 4000) // ~230 KiB
	h := rawHostWith(t, func(o *Options) { o.SubscriberBuffer = 4096 }, "/bin/sh", "-c", script)
	stream, err := h.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SendString(context.Background(), "go\r"); err != nil {
		t.Fatal(err)
	}
	got := 0
	buf := make([]byte, 2048)
	for got < size {
		n, err := stream.Read(buf)
		got += n
		if err != nil {
			t.Fatalf("slow subscriber ended after %d of %d bytes: %v", got, size, err)
		}
		time.Sleep(200 * time.Microsecond) // a slow consumer, not synchronisation
	}
}

// A stuck subscriber is cut off after the grace period and does not stop the
// others or the screen.
func TestStuckSubscriberIsCutOffAfterGrace(t *testing.T) {
	script, _ := numberedOutput(t, 20000)
	h := rawHostWith(t, func(o *Options) {
		o.SubscriberBuffer = 8192
		o.SubscriberGrace = 200 * time.Millisecond
	}, "/bin/sh", "-c", script)
	stuck, err := h.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	live, err := h.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := collect(live)
	if err := h.SendString(context.Background(), "go\r"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, "line 0019999")
	eventually(t, 10*time.Second, "the live subscriber to see the end", func() bool {
		return strings.Contains(c.String(), "line 0019999")
	})
	var rerr error
	for rerr == nil {
		_, rerr = stuck.Read(make([]byte, 4096))
	}
	if !errors.Is(rerr, ptyapi.ErrSlowSubscriber) {
		t.Fatalf("stuck subscriber ended with %v", rerr)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil && !errors.Is(c.err, io.EOF) {
		t.Fatalf("live subscriber: %v", c.err)
	}
}

// Status never reads IDLE while output has arrived that the screen's
// evaluation does not include yet.
func TestStatusIsBusyWhileOutputIsUnevaluated(t *testing.T) {
	h := rawHost(t, "/bin/cat")
	if err := h.SendString(context.Background(), "hello\r"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, "hello")
	eventually(t, 10*time.Second, "IDLE", func() bool { return status(t, h).Status == ptyapi.StatusIdle })
	h.mu.Lock()
	h.evalSeq = h.inSeq.Load() - 1 // as if a chunk were still in the emulator's backlog
	h.mu.Unlock()
	if st := status(t, h).Status; st != ptyapi.StatusBusy {
		t.Fatalf("status %s with unevaluated output, want BUSY", st)
	}
}
