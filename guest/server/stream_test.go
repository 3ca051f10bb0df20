package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/guest/ptyapi"
)

func TestInBurst(t *testing.T) {
	for _, c := range []struct {
		n, lastN int
		since    time.Duration
		want     bool
	}{
		{4096, 4096, 100 * time.Microsecond, true},  // a scrolling CLI
		{200, 64 << 10, time.Millisecond, true},     // the tail of a burst
		{4096, 0, 100 * time.Microsecond, true},     // a big chunk right after a small one
		{40, 12, 100 * time.Microsecond, false},     // typing, a spinner, a status line
		{4096, 4096, 3 * time.Millisecond, false},   // after a quiet moment
		{0, 4096, 100 * time.Microsecond, false},    // nothing read
		{1023, 1023, 100 * time.Microsecond, false}, // small redraws in quick succession
	} {
		if got := inBurst(c.n, c.lastN, c.since); got != c.want {
			t.Errorf("inBurst(%d, %d, %v) = %v, want %v", c.n, c.lastN, c.since, got, c.want)
		}
	}
}

// chunkStream is a Subscribe stream fed chunk by chunk, with ReadAvailable
// like ptyhost's subscriber.
type chunkStream struct {
	mu     sync.Mutex
	queued []byte
	avail  chan struct{}
	closed bool
}

func newChunkStream() *chunkStream { return &chunkStream{avail: make(chan struct{}, 1)} }

func (c *chunkStream) put(p []byte) {
	c.mu.Lock()
	c.queued = append(c.queued, p...)
	c.mu.Unlock()
	select {
	case c.avail <- struct{}{}:
	default:
	}
}

func (c *chunkStream) end() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.put(nil)
}

func (c *chunkStream) ReadAvailable(p []byte) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := copy(p, c.queued)
	c.queued = c.queued[n:]
	return n
}

func (c *chunkStream) Read(p []byte) (int, error) {
	for {
		if n := c.ReadAvailable(p); n > 0 {
			return n, nil
		}
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return 0, io.EOF
		}
		<-c.avail
	}
}

func (c *chunkStream) Close() error { return nil }

type streamPTY struct {
	ptyapi.PTY
	s *chunkStream
}

func (p streamPTY) Subscribe(context.Context) (io.ReadCloser, error) { return p.s, nil }

// frameRecorder records each flushed write.
type frameRecorder struct {
	*httptest.ResponseRecorder
	mu      sync.Mutex
	pending []byte
	frames  [][]byte
}

func (f *frameRecorder) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, p...)
	return len(p), nil
}

func (f *frameRecorder) Flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pending) > 0 {
		f.frames = append(f.frames, f.pending)
		f.pending = nil
	}
}

func (f *frameRecorder) snapshot() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.frames...)
}

// TestStreamCoalescesBurstsNotEchoes: a lone chunk after a quiet moment, and
// small chunks in quick succession (typing, redrawn status lines), are
// written at once, each on its own; a burst of output reaches the transport
// in a few large frames, every byte in order.
func TestStreamCoalescesBurstsNotEchoes(t *testing.T) {
	cs := newChunkStream()
	h := NewHandler(streamPTY{s: cs}, slog.New(slog.DiscardHandler))
	rec := &frameRecorder{ResponseRecorder: httptest.NewRecorder()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, PathStream, nil))
	}()

	cs.put([]byte("echo"))
	deadline := time.Now().Add(5 * time.Second)
	for len(rec.snapshot()) < 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if f := rec.snapshot(); len(f) != 1 || string(f[0]) != "echo" {
		t.Fatalf("a lone chunk: frames %q, want just \"echo\"", f)
	}
	// Small chunks well within burstGap of each other: still one frame each.
	for i := range 3 {
		time.Sleep(burstGap / 4)
		cs.put([]byte{'0' + byte(i)})
		for len(rec.snapshot()) < 2+i && time.Now().Before(deadline) {
			time.Sleep(50 * time.Microsecond)
		}
	}
	if f := rec.snapshot(); len(f) != 4 || string(bytes.Join(f, nil)) != "echo012" {
		t.Fatalf("small chunks: frames %q, want one each", f)
	}
	time.Sleep(3 * burstGap) // quiet again

	var want bytes.Buffer
	want.WriteString("echo012")
	const chunks = 400
	start := len(rec.snapshot())
	for i := range chunks {
		p := bytes.Repeat([]byte{byte('a' + i%26)}, 2000)
		want.Write(p)
		cs.put(p)
		for t0 := time.Now(); time.Since(t0) < 20*time.Microsecond; {
			// a busy CLI: the next chunk follows within microseconds
		}
	}
	cs.end()
	<-done
	frames := rec.snapshot()
	if got := bytes.Join(frames, nil); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("stream delivered %d bytes, want %d in order", len(got), want.Len())
	}
	if n := len(frames) - start; n > chunks/4 {
		t.Fatalf("a burst of %d chunks took %d frames", chunks, n)
	}
	t.Logf("a burst of %d chunks took %d frames", chunks, len(frames)-start)
}
