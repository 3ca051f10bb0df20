package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
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

// chunkStream is a Subscribe stream fed chunk by chunk, with ReadBurst like
// ptyhost's subscriber.
type chunkStream struct {
	mu     sync.Mutex
	queued []byte
	lastIn time.Time
	avail  chan struct{}
	closed bool
}

func newChunkStream() *chunkStream { return &chunkStream{avail: make(chan struct{}, 1)} }

func (c *chunkStream) put(p []byte) {
	c.mu.Lock()
	c.queued = append(c.queued, p...)
	c.lastIn = time.Now()
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

func (c *chunkStream) take(p []byte) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := copy(p, c.queued)
	c.queued = c.queued[n:]
	return n
}

// ReadBurst polls where the subscriber waits for a signal.
func (c *chunkStream) ReadBurst(p []byte, quiet, max time.Duration) int {
	n := 0
	for deadline := time.Now().Add(max); ; time.Sleep(quiet / 10) {
		n += c.take(p[n:])
		c.mu.Lock()
		idle, closed := time.Since(c.lastIn), c.closed
		c.mu.Unlock()
		if n == len(p) || closed || idle >= quiet || time.Now().After(deadline) {
			return n
		}
	}
}

func (c *chunkStream) Read(p []byte) (int, error) {
	for {
		if n := c.take(p); n > 0 {
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

// frameConn records the chunks a server connection writes after the
// stream's response head, one entry per write, each decoded to its bytes.
type frameConn struct {
	net.Conn
	mu     sync.Mutex
	head   bool
	frames [][]byte
	t      *testing.T
}

func (c *frameConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.head {
		c.head = true
	} else if f := decodeChunk(c.t, p); f != nil {
		c.frames = append(c.frames, f)
	}
	return c.Conn.Write(p)
}

func (c *frameConn) snapshot() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.frames...)
}

// decodeChunk checks that p is exactly one HTTP chunk and returns its bytes
// (nil for the last chunk).
func decodeChunk(t *testing.T, p []byte) []byte {
	line, rest, ok := bytes.Cut(p, []byte("\r\n"))
	size, err := strconv.ParseUint(string(line), 16, 32)
	if !ok || err != nil || (size > 0 && (uint64(len(rest)) != size+2 || !bytes.HasSuffix(rest, []byte("\r\n")))) {
		t.Errorf("write %q is not one chunk", p)
		return nil
	}
	if size == 0 {
		return nil
	}
	return append([]byte(nil), rest[:size]...)
}

type frameListener struct {
	net.Listener
	t     *testing.T
	conns chan *frameConn
}

func (l *frameListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	fc := &frameConn{Conn: c, t: l.t}
	l.conns <- fc
	return fc, nil
}

// serveStream serves h's stream over a real HTTP/1.1 connection and returns
// the server side of it and the client's response.
func serveStream(t *testing.T, h http.Handler) (*frameConn, *http.Response) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	fl := &frameListener{Listener: srv.Listener, t: t, conns: make(chan *frameConn, 1)}
	srv.Listener = fl
	srv.Start()
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL + PathStream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("stream answered %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	return <-fl.conns, resp
}

// TestStreamCoalescesBurstsNotEchoes: a lone chunk after a quiet moment, and
// small chunks in quick succession (typing, redrawn status lines), are
// written at once, each on its own; a burst of output reaches the transport
// in a few large chunks, each one write, every byte in order.
func TestStreamCoalescesBurstsNotEchoes(t *testing.T) {
	cs := newChunkStream()
	rec, resp := serveStream(t, NewHandler(streamPTY{s: cs}, slog.New(slog.DiscardHandler)))
	body := make(chan []byte, 1)
	go func() {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Errorf("reading the stream: %v", err)
		}
		body <- b
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
	got := <-body
	frames := rec.snapshot()
	if !bytes.Equal(got, want.Bytes()) || !bytes.Equal(bytes.Join(frames, nil), want.Bytes()) {
		t.Fatalf("stream delivered %d bytes in %d frames, want %d in order", len(got), len(frames), want.Len())
	}
	if n := len(frames) - start; n > chunks/4 {
		t.Fatalf("a burst of %d chunks took %d frames", chunks, n)
	}
	t.Logf("a burst of %d chunks took %d frames", chunks, len(frames)-start)
}

// hangupPTY's stream produces nothing until the context Subscribe got ends.
type hangupPTY struct {
	ptyapi.PTY
	ctxs chan context.Context
}

func (p hangupPTY) Subscribe(ctx context.Context) (io.ReadCloser, error) {
	p.ctxs <- ctx
	return io.NopCloser(ctxReader{ctx}), nil
}

type ctxReader struct{ ctx context.Context }

func (r ctxReader) Read([]byte) (int, error) {
	<-r.ctx.Done()
	return 0, io.EOF
}

// TestStreamEndsWhenTheClientHangsUp: the stream takes its connection over
// from net/http, which then no longer ends the request's context when the
// client goes away; the stream must notice by itself, or an idle CLI's
// subscription would outlive its client.
func TestStreamEndsWhenTheClientHangsUp(t *testing.T) {
	p := hangupPTY{ctxs: make(chan context.Context, 1)}
	_, resp := serveStream(t, NewHandler(p, slog.New(slog.DiscardHandler)))
	ctx := <-p.ctxs
	select {
	case <-ctx.Done():
		t.Fatal("the subscription ended before the client hung up")
	case <-time.After(50 * time.Millisecond):
	}
	_ = resp.Body.Close()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the subscription outlived its client")
	}
}
