package wire_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/hashicorp/yamux"

	"aicli.dev/aicli/guest/sidechannel/wire"
)

// writeLog is a net.Conn that records the size of every write it passes on.
type writeLog struct {
	net.Conn
	mu    sync.Mutex
	sizes []int
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.sizes = append(w.sizes, len(p))
	w.mu.Unlock()
	return w.Conn.Write(p)
}

func (w *writeLog) reset() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.sizes
	w.sizes = nil
	return s
}

// muxPair runs yamux over TLS over a unix socket pair the way both ends of the side channel do, and returns the
// client session (the writer under test), the server session and the log of the client's socket writes.
func muxPair(t *testing.T) (client, server *yamux.Session, writes *writeLog) {
	t.Helper()
	fds, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	writes = &writeLog{Conn: fds[0]}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := wire.SelfSigned(key, "test")
	if err != nil {
		t.Fatal(err)
	}
	cu, su := wire.NewRecordBatcher(writes), wire.NewRecordBatcher(fds[1])
	ct := tls.Client(cu, &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true}) //nolint:gosec // test
	st := tls.Server(su, &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}})
	errc := make(chan error, 1)
	go func() { errc <- st.Handshake() }()
	if err := ct.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if client, err = yamux.Client(wire.NewMuxConn(ct, cu), wire.MuxConfig(log)); err != nil {
		t.Fatal(err)
	}
	if server, err = yamux.Server(wire.NewMuxConn(st, su), wire.MuxConfig(log)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return client, server, writes
}

func socketPair() ([2]net.Conn, error) {
	var c [2]net.Conn
	ln, err := net.Listen("unix", "")
	if err != nil {
		return c, err
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		a, _ := ln.Accept()
		accepted <- a
	}()
	if c[0], err = net.Dial("unix", ln.Addr().String()); err != nil {
		return c, err
	}
	c[1] = <-accepted
	return c, nil
}

// streamPair opens a stream from client and returns both of its ends.
func streamPair(t *testing.T, client, server *yamux.Session) (cs, ss *yamux.Stream) {
	t.Helper()
	acc := make(chan *yamux.Stream, 1)
	go func() {
		s, err := server.AcceptStream()
		if err != nil {
			t.Error(err)
		}
		acc <- s
	}()
	cs, err := client.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	return cs, <-acc
}

// TestDataFrameIsOneSocketWrite: a 64 KiB stream write — one yamux data frame, five TLS records once its header is
// counted — leaves in a single socket write, and arrives whole.
func TestDataFrameIsOneSocketWrite(t *testing.T) {
	client, server, writes := muxPair(t)
	cs, ss := streamPair(t, client, server)
	if _, err := cs.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(ss, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	writes.reset()

	payload := bytes.Repeat([]byte("0123456789abcdef"), 4<<10) // 64 KiB
	if _, err := cs.Write(payload); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(ss, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("payload corrupted")
	}
	sizes := writes.reset()
	if len(sizes) != 1 || sizes[0] < len(payload) {
		t.Fatalf("a 64 KiB data frame took socket writes of %v bytes, want one", sizes)
	}
}

// TestHeaderOnlyFramesAreNotHeldBack: frames without a body (window updates, pings) go out at once. A transfer far
// beyond the stream window needs the reader's window updates to arrive while the writer waits for them, so it
// would stall if a header-only frame stayed gathered.
func TestHeaderOnlyFramesAreNotHeldBack(t *testing.T) {
	client, server, _ := muxPair(t)
	if _, err := server.Ping(); err != nil {
		t.Fatal(err)
	}
	cs, ss := streamPair(t, client, server)
	const total = 8 * wire.MaxStreamWindow
	errc := make(chan error, 1)
	go func() {
		chunk := bytes.Repeat([]byte{'x'}, 48<<10)
		for sent := 0; sent < total; sent += len(chunk) {
			if _, err := cs.Write(chunk); err != nil {
				errc <- err
				return
			}
		}
		errc <- cs.Close()
	}()
	n, err := io.Copy(io.Discard, ss)
	if err != nil || n < total {
		t.Fatalf("read %d of %d bytes: %v", n, total, err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
