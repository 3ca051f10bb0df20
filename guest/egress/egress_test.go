package egress_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/guest/egress/egresswire"

	"aicli.dev/aicli/guest/egress"
)

// openerFunc adapts a function to egress.Opener.
type openerFunc func(ctx context.Context) (net.Conn, error)

func (f openerFunc) Open(ctx context.Context) (net.Conn, error) { return f(ctx) }

func start(t *testing.T, o egress.Opener, maxConns int) *egress.Proxy {
	t.Helper()
	p, err := egress.Listen(egress.Options{Streams: o, ProviderAddr: "127.0.0.1:0", ProxyAddr: "127.0.0.1:0",
		MaxConns: maxConns, OpenTimeout: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return p
}

// TestSupervisorUnreachable: without a side channel the client gets a 502 on both listeners, never a hang.
func TestSupervisorUnreachable(t *testing.T) {
	p := start(t, openerFunc(func(context.Context) (net.Conn, error) { return nil, errors.New("no session") }), 0)
	c, err := net.Dial("tcp", p.ProxyAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_, _ = io.WriteString(c, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	r2, err := http.Get(egresswire.ProviderURL(p.ProviderAddr().String()) + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r2.Body)
	_ = r2.Body.Close()
	if r2.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "supervisor unreachable") {
		t.Fatalf("provider: %d %q", r2.StatusCode, body)
	}
}

// TestMaxConns: beyond MaxConns concurrent clients, a new connection is closed at once; a slot frees when a
// client leaves.
func TestMaxConns(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	p := start(t, openerFunc(func(ctx context.Context) (net.Conn, error) {
		select { // a supervisor that never answers: the first client holds its slot
		case <-block:
		case <-ctx.Done():
		}
		return nil, errors.New("gone")
	}), 1)
	first, err := net.Dial("tcp", p.ProviderAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fmt.Fprint(first, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	deadline := time.Now().Add(10 * time.Second)
	for { // the second connection is dropped once the first one holds the only slot
		second, err := net.Dial("tcp", p.ProxyAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = second.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, rerr := second.Read(make([]byte, 1))
		_ = second.Close()
		if n == 0 && errors.Is(rerr, io.EOF) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("second connection was not refused: %d %v", n, rerr)
		}
	}
	_ = first.Close()
}

func TestCLIEnv(t *testing.T) {
	env := egresswire.CLIEnv(egresswire.DefaultProxyAddr)
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
		if env[k] != "http://127.0.0.1:3128" {
			t.Errorf("%s = %q", k, env[k])
		}
	}
	if !strings.Contains(env["NO_PROXY"], "127.0.0.1") || env["no_proxy"] != env["NO_PROXY"] {
		t.Errorf("NO_PROXY %q no_proxy %q: loopback (the provider port) must bypass the proxy", env["NO_PROXY"], env["no_proxy"])
	}
	if got := egresswire.ProviderURL(egresswire.DefaultProviderAddr); got != "http://127.0.0.1:8780" {
		t.Errorf("ProviderURL = %q", got)
	}
}
