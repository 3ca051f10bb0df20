package egress_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/internal/egress"
)

// openTunnel CONNECTs through the guest's proxy and returns the client connection and its reader.
func openTunnel(t *testing.T, e *env, target string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", e.proxy.ProxyAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, _ = fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %v %v", target, resp, err)
	}
	return c, br
}

// TestTunnelIdleTimeout: a tunnel with traffic in only one direction stays open past IdleTimeout (a silent client
// reading a long stream is not idle); one with no traffic at all is closed after about IdleTimeout.
func TestTunnelIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	// "tick\n" makes the target send a byte every 50 ms for 1 s; anything else and it sends nothing.
	ln := serveTCP(t, func(c net.Conn) {
		mode := make([]byte, 5)
		if _, err := io.ReadFull(c, mode); err != nil || string(mode) != "tick\n" {
			_, _ = io.Copy(io.Discard, c)
			return
		}
		for range 20 {
			if _, err := c.Write([]byte(".")); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	e := newEnv(t, egress.Options{IdleTimeout: idle})
	e.policy(t, "", ln.Addr().String())

	c, br := openTunnel(t, e, ln.Addr().String())
	_, _ = io.WriteString(c, "tick\n") // the client then stays silent for 1 s, > 3 × idle
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(br)
	if err != nil || len(got) != 20 {
		t.Fatalf("streamed %d bytes (%v), want all 20: a one-way stream was cut as idle", len(got), err)
	}

	q, qbr := openTunnel(t, e, ln.Addr().String())
	_ = q.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := qbr.ReadByte(); err != io.EOF {
		t.Fatalf("quiet tunnel: %v, want EOF after the idle timeout", err)
	}
	if d := time.Since(start); d < idle*2/3 || d > 5*time.Second { // idleness counts from the tunnel's start
		t.Fatalf("quiet tunnel closed after %v, want about %v", d, idle)
	}
	waitFor(t, "no active streams", func() bool { return e.server.Stats().Active == 0 })
}

// TestCloseEndsEverything: Server.Close ends an open tunnel and a kept-alive provider connection, and later streams
// are refused.
func TestCloseEndsEverything(t *testing.T) {
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "p") }))
	t.Cleanup(prov.Close)
	ln := echoListener(t)
	e := newEnv(t, egress.Options{})
	e.policy(t, prov.URL, ln.Addr().String())

	_, br := openTunnel(t, e, ln.Addr().String())
	pc, err := net.Dial("tcp", e.proxy.ProviderAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	pbr := bufio.NewReader(pc)
	_, _ = io.WriteString(pc, "GET /k HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(pbr, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("provider: %v %v", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	waitFor(t, "two active streams", func() bool { return e.server.Stats().Active == 2 })

	done := make(chan error, 1)
	go func() { done <- e.server.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with a tunnel and a provider connection open")
	}
	for name, r := range map[string]*bufio.Reader{"tunnel": br, "provider": pbr} {
		if b, err := r.ReadByte(); err == nil {
			t.Fatalf("%s still open after Close (read %q)", name, b)
		}
	}
	rep, err := rawStream(t, e, frame(`{"kind":"proxy","target":"`+ln.Addr().String()+`"}`))
	if err != nil || rep.OK || !strings.Contains(string(rep.Reason), "shutting_down") {
		t.Fatalf("after Close: %+v %v", rep, err)
	}
}
