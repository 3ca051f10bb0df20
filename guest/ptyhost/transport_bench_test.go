package ptyhost

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/yamux"

	"aicli.dev/aicli/guest/ptyclient"
	"aicli.dev/aicli/guest/server"
	"aicli.dev/aicli/guest/sidechannel/wire"
)

// sideChannel serves h like the guest does (HTTP over yamux over TLS 1.3 on a
// unix socket pair) and returns the supervisor's client for it. window
// overrides yamux's per-stream window when non-zero.
func sideChannel(b *testing.B, h *Host, window uint32) *ptyclient.Client {
	b.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "guest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		b.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv}
	ln, err := net.Listen("unix", filepath.Join(b.TempDir(), "s"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ln.Close() })
	cfg := wire.MuxConfig(slog.New(slog.DiscardHandler))
	if window != 0 {
		cfg.MaxStreamWindowSize = window
	}
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		tc := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
		sess, err := yamux.Server(tc, cfg)
		if err != nil {
			return
		}
		_ = http.Serve(sess, server.Handler(h))
	}()
	conn, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}) //nolint:gosec // bench only
	sess, err := yamux.Client(tc, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sess.Close() })
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) { return sess.Open() },
	}}
	return ptyclient.New(hc, "http://guest")
}

// BenchmarkPTYThroughputSideChannel reads the same 8 MiB burst as
// BenchmarkPTYThroughput through the guest's HTTP handler over yamux and TLS,
// with the side channel's stream window (wire.MaxStreamWindow) and with a larger one.
func BenchmarkPTYThroughputSideChannel(b *testing.B) {
	dir := b.TempDir()
	file := filepath.Join(dir, "out.txt")
	line := strings.Repeat("the quick brown fox jumps over the lazy dog ", 2) + "\n"
	data := bytes.Repeat([]byte(line), (8<<20)/len(line))
	if err := os.WriteFile(file, data, 0o644); err != nil {
		b.Fatal(err)
	}
	script := "read go; cat " + file
	for _, c := range []struct {
		name   string
		window uint32
	}{{"window-1MiB", 0}, {"window-4MiB", 4 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				h := rawHost(b, "/bin/sh", "-c", script)
				cl := sideChannel(b, h, c.window)
				stream, err := cl.Subscribe(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if err := h.SendString(context.Background(), "go\r"); err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, stream)
				if err != nil && !errors.Is(err, io.EOF) {
					b.Fatal(err)
				}
				if n < int64(len(data)) {
					b.Fatalf("read %d of %d bytes", n, len(data))
				}
				_ = stream.Close()
				_ = h.Close()
			}
		})
	}
}
