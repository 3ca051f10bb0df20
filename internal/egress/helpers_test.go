package egress_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	guestegress "aicli.dev/aicli/guest/egress"
	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/guest/sidechannel"
	"aicli.dev/aicli/guest/sidechannel/wire"
	"aicli.dev/aicli/internal/egress"
	"aicli.dev/aicli/internal/gateway"
	"aicli.dev/aicli/internal/gateway/gatewaytest"
)

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// denial is one Denied callback.
type denial struct{ conv, target, reason string }

// recorder collects Denied callbacks.
type recorder struct {
	mu  sync.Mutex
	got []denial
}

func (r *recorder) denied(conv, target, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, denial{conv, target, reason})
}

func (r *recorder) all() []denial {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]denial(nil), r.got...)
}

// dialLog records every address the server dialed.
type dialLog struct {
	// offline records dials without connecting (addresses a test may not reach).
	offline bool
	mu      sync.Mutex
	addrs   []string
}

func (d *dialLog) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	offline := d.offline
	d.mu.Unlock()
	if offline {
		return nil, errors.New("test dialer: offline")
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func (d *dialLog) all() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// env is one in-process supervisor (gateway + egress server) and one guest (side channel + egress proxies)
// connected over a real unix socket.
type env struct {
	conv     string
	server   *egress.Server
	gw       *gateway.Gateway
	out      *sidechannel.Outbound
	proxy    *guestegress.Proxy
	denials  *recorder
	dials    *dialLog
	proxyURL string // http://<forward proxy>
	provider string // http://<provider port>
}

// newEnv starts the pair; opts.Denied and opts.Dial are filled in by the env.
func newEnv(t testing.TB, opts egress.Options) *env {
	t.Helper()
	e := &env{conv: "conv-egress", denials: &recorder{}, dials: &dialLog{}, out: &sidechannel.Outbound{}}
	opts.Denied = e.denials.denied
	opts.Dial = e.dials.dial
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	opts.Logger = log
	srv, err := egress.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.server = srv
	t.Cleanup(func() { _ = e.server.Close() })
	dir := t.TempDir()
	gw, err := gateway.New(gateway.Options{DataDir: dir, Tokens: gatewaytest.NewTokens(), Logger: log,
		GuestStreams: e.server})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	e.gw = gw
	l, err := gw.Prepare(context.Background(), e.conv)
	if err != nil {
		t.Fatal(err)
	}
	b := sidechannel.Bootstrap{
		SocketPath:            filepath.Join(l.HostDir, wire.SocketName),
		SupervisorFingerprint: gw.Fingerprint(),
		ConversationID:        e.conv,
		LaunchToken:           l.Env[wire.EnvLaunchToken],
		Outbound:              e.out,
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sidechannel.Serve(ctx, b, http.NotFoundHandler(), log.With("side", "guest")) }()
	p, err := guestegress.Listen(guestegress.Options{Streams: e.out, ProviderAddr: "127.0.0.1:0",
		ProxyAddr: "127.0.0.1:0", Logger: log.With("side", "guest"), OpenTimeout: 10 * time.Second})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	e.proxy = p
	proxied := make(chan error, 1)
	go func() { proxied <- p.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		for _, ch := range []chan error{served, proxied} {
			select {
			case <-ch:
			case <-time.After(10 * time.Second):
				t.Error("guest side did not stop")
			}
		}
	})
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if _, err := gw.WaitGuest(wctx, e.conv); err != nil {
		t.Fatal(err)
	}
	e.proxyURL = "http://" + p.ProxyAddr().String()
	e.provider = egresswire.ProviderURL(p.ProviderAddr().String())
	return e
}

// policy sets the conversation's policy from a provider endpoint and allow entries.
func (e *env) policy(t *testing.T, provider string, allow ...string) {
	t.Helper()
	p, err := egress.NewPolicy(provider, allow)
	if err != nil {
		t.Fatal(err)
	}
	e.server.SetPolicy(e.conv, p)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
