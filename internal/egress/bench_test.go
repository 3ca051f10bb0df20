package egress_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"aicli.dev/aicli/internal/egress"
)

// BenchmarkProviderRequest measures one small request/response through the provider port on a kept-alive
// connection: guest loopback → side-channel stream → supervisor reverse proxy → loopback provider.
func BenchmarkProviderRequest(b *testing.B) {
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	b.Cleanup(prov.Close)
	e := newEnv(b, egress.Options{})
	p, err := egress.NewPolicy(prov.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	e.server.SetPolicy(e.conv, p)
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	b.ResetTimer()
	for b.Loop() {
		resp, err := c.Get(e.provider + "/x")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

// BenchmarkConnectSetup measures opening a CONNECT tunnel (policy check and dial included) and one byte round
// trip through it.
func BenchmarkConnectSetup(b *testing.B) {
	ln := echoListener(b)
	e := newEnv(b, egress.Options{})
	p, _ := egress.NewPolicy("", []string{ln.Addr().String()})
	e.server.SetPolicy(e.conv, p)
	buf := make([]byte, 1)
	b.ResetTimer()
	for b.Loop() {
		c, err := net.Dial("tcp", e.proxy.ProxyAddr().String())
		if err != nil {
			b.Fatal(err)
		}
		_, _ = fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", ln.Addr())
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(resp, err)
		}
		_, _ = c.Write([]byte{'x'})
		if _, err := io.ReadFull(br, buf); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
}

// BenchmarkTunnelThroughput streams 64 MiB one way through a CONNECT tunnel per iteration.
func BenchmarkTunnelThroughput(b *testing.B) {
	const size = 64 << 20
	ln := serveTCP(b, func(c net.Conn) { _, _ = io.CopyN(c, zeroReader{}, size) })
	e := newEnv(b, egress.Options{})
	p, _ := egress.NewPolicy("", []string{ln.Addr().String()})
	e.server.SetPolicy(e.conv, p)
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		c, err := net.Dial("tcp", e.proxy.ProxyAddr().String())
		if err != nil {
			b.Fatal(err)
		}
		_, _ = fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", ln.Addr())
		br := bufio.NewReader(c)
		if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
			b.Fatal(resp, err)
		}
		n, err := io.Copy(io.Discard, br)
		if err != nil || n != size {
			b.Fatalf("read %d: %v", n, err)
		}
		_ = c.Close()
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// echoListener echoes every connection until the test or benchmark ends.
func echoListener(tb testing.TB) net.Listener {
	return serveTCP(tb, func(c net.Conn) { _, _ = io.Copy(c, c) })
}

// serveTCP listens on loopback and runs handle for every connection (closing it afterwards) until tb ends.
func serveTCP(tb testing.TB, handle func(net.Conn)) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				handle(c)
			}()
		}
	}()
	return ln
}
