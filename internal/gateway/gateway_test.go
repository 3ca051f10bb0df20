package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"aicli.dev/aicli/guest/sidechannel"
	"aicli.dev/aicli/guest/sidechannel/wire"
	"aicli.dev/aicli/internal/gateway"
)

func TestHappyPath(t *testing.T) {
	e := newEnv(t)
	l, err := e.g.Prepare(context.Background(), "conv-1")
	if err != nil {
		t.Fatal(err)
	}
	if l.ContainerDir != "/run/aicli" || l.Env[wire.EnvSocket] != "/run/aicli/gw.sock" {
		t.Fatalf("launch mount/env: %+v", l)
	}
	if l.HostSocket != filepath.Join(l.HostDir, "gw.sock") {
		t.Fatalf("host socket %s", l.HostSocket)
	}
	if fi, err := os.Stat(l.HostSocket); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v", fi, err)
	}
	if l.Env[wire.EnvFingerprint] != e.g.Fingerprint() || l.Env[wire.EnvConversationID] != "conv-1" {
		t.Fatalf("launch env: %v", l.Env)
	}
	fi, err := os.Stat(l.HostDir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("host dir %s: %v %v", l.HostDir, fi, err)
	}
	if _, ok := e.g.Guest("conv-1"); ok {
		t.Fatal("guest reported before any dial")
	}
	b := hostBootstrap(l)
	s := dialServe(t, b)
	gc := waitGuest(t, e.g, "conv-1")
	if gc.ConversationID() != "conv-1" || gc.GuestFingerprint() != s.Fingerprint() {
		t.Fatalf("guest conn %s %s, session fingerprint %s", gc.ConversationID(), gc.GuestFingerprint(), s.Fingerprint())
	}
	if !wire.ValidFingerprint(gc.GuestFingerprint()) || gc.GuestFingerprint() == e.g.Fingerprint() {
		t.Fatalf("guest fingerprint %q", gc.GuestFingerprint())
	}
	if cur, ok := e.g.Guest("conv-1"); !ok || cur != gc {
		t.Fatal("Guest does not return the admitted connection")
	}
	if _, err := gc.Ping(); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	// Many concurrent requests, each its own yamux stream or a reused keep-alive stream.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("/r/%d", i)
			resp, err := gc.HTTPClient().Post(gateway.BaseURL+path, "text/plain", strings.NewReader(strings.Repeat("x", 100_000)))
			if err != nil {
				errs <- err
				return
			}
			defer func() { _ = resp.Body.Close() }()
			body, _ := io.ReadAll(resp.Body)
			if string(body) != "guest conv-1 "+path {
				errs <- fmt.Errorf("reply %q", body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := e.g.Stats()
	if st.Admitted != 1 || st.Live != 1 || len(st.Refused) != 0 {
		t.Fatalf("stats %+v", st)
	}
	e.assertNoSecretsLogged(b.LaunchToken)

	// The guest going away is noticed.
	_ = s.Close()
	select {
	case <-gc.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("guest close not noticed")
	}
	eventually(t, 5*time.Second, func() error {
		if _, ok := e.g.Guest("conv-1"); ok {
			return errors.New("guest still reported after disconnect")
		}
		return nil
	})
}

func TestTokensStoredHashed(t *testing.T) {
	e := newEnv(t)
	b := e.prepare("conv-h")
	hash := sha256.Sum256([]byte(b.LaunchToken))
	snap := e.store.snapshot()
	if _, ok := snap["gateway-launch/"+hex.EncodeToString(hash[:])]; !ok || len(snap) != 1 {
		t.Fatalf("store keys %v, want the token's SHA-256 only", keys(snap))
	}
	assertAbsent(t, snap, b.LaunchToken)

	rg := newRawGuest(t)
	rep, _, err := rg.hello(t, b.SocketPath, b.SupervisorFingerprint, wire.Hello{ConversationID: "conv-h", LaunchToken: b.LaunchToken})
	if err != nil || !rep.OK || rep.ReconnectSecret == "" || rep.GuestFingerprint != rg.fp {
		t.Fatalf("reply %+v, err %v", rep, err)
	}
	snap = e.store.snapshot()
	if _, ok := snap["gateway-launch/"+hex.EncodeToString(hash[:])]; ok {
		t.Fatal("launch token still stored after it was spent")
	}
	if _, ok := snap["gateway-reconnect/conv-h"]; !ok {
		t.Fatalf("no reconnect record: %v", keys(snap))
	}
	assertAbsent(t, snap, b.LaunchToken, rep.ReconnectSecret)
	e.assertNoSecretsLogged(b.LaunchToken, rep.ReconnectSecret)
}

// stackDump returns every goroutine's stack.
func stackDump() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// counterValue reads one labelled counter from a registry.
func counterValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// gaugeValue reads one unlabelled gauge from a registry.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func assertAbsent(t *testing.T, snap map[string][]byte, secrets ...string) {
	t.Helper()
	for k, v := range snap {
		for _, s := range secrets {
			if strings.Contains(k, s) || bytes.Contains(v, []byte(s)) {
				t.Fatalf("raw secret stored under %s", k)
			}
		}
	}
}

func TestLaunchTokenReplay(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(o *gateway.Options) { o.Registerer = reg })
	b := e.prepare("conv-r")
	dialServe(t, b)
	gc := waitGuest(t, e.g, "conv-r")

	_, err := sidechannel.Dial(context.Background(), b, nil)
	var refused *sidechannel.RefusedError
	if !errors.As(err, &refused) || refused.Reason != wire.ReasonTokenUnknown {
		t.Fatalf("replay: err = %v, want refusal %s", err, wire.ReasonTokenUnknown)
	}
	e.waitRefusal(wire.ReasonTokenUnknown, 1)
	if got := counterValue(t, reg, "aicli_gateway_refused_total", "reason", "token_unknown"); got != 1 {
		t.Fatalf("prometheus refused{token_unknown} = %v", got)
	}
	if got := counterValue(t, reg, "aicli_gateway_admitted_total", "kind", "launch"); got != 1 {
		t.Fatalf("prometheus admitted{launch} = %v", got)
	}
	if got := gaugeValue(t, reg, "aicli_gateway_live_guests"); got != 1 {
		t.Fatalf("prometheus live guests = %v", got)
	}
	if _, err := gateway.New(gateway.Options{DataDir: t.TempDir(), Tokens: newMemStore(), Registerer: reg}); err == nil {
		t.Fatal("a second gateway registered the same collectors")
	}
	if got := counterValue(t, reg, "aicli_gateway_refused_total", "reason", "token_unknown"); got != 1 {
		t.Fatalf("the failed second registration removed the first gateway's counters (%v)", got)
	}
	if cur, ok := e.g.Guest("conv-r"); !ok || cur != gc {
		t.Fatal("the replay displaced the admitted guest")
	}
	if got := get(t, gc, "/still"); got != "guest conv-r /still" {
		t.Fatalf("admitted guest broken after replay: %q", got)
	}
	e.assertNoSecretsLogged(b.LaunchToken)
	e.goodGuestConnects("conv-r2")
}

func TestConcurrentTokenUseOneWins(t *testing.T) {
	e := newEnv(t)
	b := e.prepare("conv-c")
	const n = 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok, refused int
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := sidechannel.Dial(context.Background(), b, nil)
			mu.Lock()
			defer mu.Unlock()
			var re *sidechannel.RefusedError
			switch {
			case err == nil:
				ok++
				t.Cleanup(func() { _ = s.Close() })
			case errors.As(err, &re) && re.Reason == wire.ReasonTokenUnknown:
				refused++
			default:
				t.Errorf("unexpected dial error: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 1 || refused != n-1 {
		t.Fatalf("admitted %d, refused %d; want exactly one admission", ok, refused)
	}
}

func TestExpiredToken(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	e := newEnv(t, func(o *gateway.Options) { o.Clock = clock.Now })
	b := e.prepare("conv-e")
	clock.Advance(gateway.DefaultTokenTTL + time.Second)
	_, err := sidechannel.Dial(context.Background(), b, nil)
	var refused *sidechannel.RefusedError
	if !errors.As(err, &refused) || refused.Reason != wire.ReasonTokenExpired {
		t.Fatalf("err = %v, want refusal %s", err, wire.ReasonTokenExpired)
	}
	e.waitRefusal(wire.ReasonTokenExpired, 1)
	// The expired token was spent: presenting it again is an unknown token.
	if _, err := sidechannel.Dial(context.Background(), b, nil); !errors.As(err, &refused) || refused.Reason != wire.ReasonTokenUnknown {
		t.Fatalf("second use: %v", err)
	}
	// An expired token that was never presented is dropped from the store at the next Prepare.
	stale := e.prepare("conv-e")
	clock.Advance(gateway.DefaultTokenTTL)
	fresh := e.prepare("conv-e")
	snap := e.store.snapshot()
	if _, ok := snap["gateway-launch/"+hashHex(stale.LaunchToken)]; ok {
		t.Fatal("expired unspent token still stored")
	}
	if _, ok := snap["gateway-launch/"+hashHex(fresh.LaunchToken)]; !ok {
		t.Fatal("fresh token not stored")
	}
	// A fresh token for the same conversation works (within its TTL).
	dialServe(t, fresh)
	waitGuest(t, e.g, "conv-e")
}

func TestWrongConversationID(t *testing.T) {
	e := newEnv(t)
	a := e.prepare("conv-a")
	bb := e.prepare("conv-b")

	// A's token, A's socket, but the hello claims B.
	lie := a
	lie.ConversationID = "conv-b"
	_, err := sidechannel.Dial(context.Background(), lie, nil)
	var refused *sidechannel.RefusedError
	if !errors.As(err, &refused) || refused.Reason != wire.ReasonConversationMismatch {
		t.Fatalf("claimed other id: err = %v", err)
	}
	e.waitRefusal(wire.ReasonConversationMismatch, 1)

	// B's token presented on A's socket with A's id.
	cross := a
	cross.LaunchToken = bb.LaunchToken
	if _, err := sidechannel.Dial(context.Background(), cross, nil); !errors.As(err, &refused) || refused.Reason != wire.ReasonConversationMismatch {
		t.Fatalf("token of another conversation: err = %v", err)
	}
	e.waitRefusal(wire.ReasonConversationMismatch, 2)
	if _, ok := e.g.Guest("conv-a"); ok {
		t.Fatal("a guest was bound after mismatches")
	}
	e.goodGuestConnects("conv-a")
	e.goodGuestConnects("conv-b")
}

func TestGuestRefusesWrongSupervisor(t *testing.T) {
	e := newEnv(t)
	b := e.prepare("conv-p")
	wrong := b
	wrong.SupervisorFingerprint = wire.Fingerprint([]byte("some other key"))
	_, err := sidechannel.Dial(context.Background(), wrong, nil)
	if !errors.Is(err, sidechannel.ErrSupervisorMismatch) {
		t.Fatalf("err = %v, want ErrSupervisorMismatch", err)
	}
	e.waitRefusal(wire.ReasonTLSHandshake, 1)
	if !strings.Contains(e.logs.String(), "bad certificate") {
		t.Fatalf("supervisor log does not show the guest's certificate rejection:\n%s", e.logs.String())
	}
	// No hello was sent, so the token is unspent and the real guest gets in with it.
	dialServe(t, b)
	if got := get(t, waitGuest(t, e.g, "conv-p"), "/x"); got != "guest conv-p /x" {
		t.Fatalf("reply %q", got)
	}
}

func TestClientWithoutCertificate(t *testing.T) {
	e := newEnv(t)
	b := e.prepare("conv-n")
	rg := &rawGuest{} // no certificate
	_, _, err := rg.hello(t, b.SocketPath, b.SupervisorFingerprint, wire.Hello{ConversationID: "conv-n", LaunchToken: b.LaunchToken})
	if err == nil {
		t.Fatal("a client without a certificate got a reply")
	}
	e.waitRefusal(wire.ReasonNoClientCert, 1)
	// The token was never read by the supervisor, so it still admits the real guest.
	dialServe(t, b)
	waitGuest(t, e.g, "conv-n")
}

func TestGarbageBytes(t *testing.T) {
	e := newEnv(t)
	b := e.prepare("conv-g")
	conn := dialUnix(t, b.SocketPath)
	if _, err := conn.Write(bytes.Repeat([]byte("GET / HTTP/1.1\r\nnot tls at all\r\n"), 20)); err != nil {
		t.Fatal(err)
	}
	e.waitRefusal(wire.ReasonTLSHandshake, 1)
	assertClosedByPeer(t, conn)
	e.goodGuestConnects("conv-g")
}

func TestDisconnectMidHandshake(t *testing.T) {
	e := newEnv(t, func(o *gateway.Options) { o.HandshakeTimeout = time.Second })
	b := e.prepare("conv-d")

	// 1. Connect and hang up before any byte.
	c := dialUnix(t, b.SocketPath)
	_ = c.Close()
	e.waitRefusal(wire.ReasonDisconnected, 1)

	// 2. Half a ClientHello, then hang up.
	c = dialUnix(t, b.SocketPath)
	_, _ = c.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01})
	_ = c.Close()
	e.waitRefusal(wire.ReasonDisconnected, 2)

	// 3. Full TLS, then hang up before the hello.
	tc, err := newRawGuest(t).tlsDial(t, b.SocketPath, b.SupervisorFingerprint)
	if err != nil {
		t.Fatal(err)
	}
	_ = tc.Close()
	e.waitRefusal(wire.ReasonDisconnected, 3)

	// 4. Half a hello frame, then silence: the handshake deadline ends it.
	tc, err = newRawGuest(t).tlsDial(t, b.SocketPath, b.SupervisorFingerprint)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = tc.Write([]byte{0, 0, 0, 50, '{'})
	e.waitRefusal(wire.ReasonTimeout, 1)

	// 5. Connect and say nothing at all.
	c = dialUnix(t, b.SocketPath)
	e.waitRefusal(wire.ReasonTimeout, 2)
	assertClosedByPeer(t, c)

	// The token was never presented: the real guest still gets in with it.
	dialServe(t, b)
	waitGuest(t, e.g, "conv-d")
	e.goodGuestConnects("conv-d2")
}

func TestMalformedHello(t *testing.T) {
	e := newEnv(t)
	b := e.prepare("conv-m")
	cases := []struct {
		name  string
		write func(w io.Writer) error
	}{
		{"both credentials", func(w io.Writer) error {
			return wire.WriteFrame(w, wire.Hello{ConversationID: "conv-m", LaunchToken: "x", ReconnectSecret: "y"})
		}},
		{"no credential", func(w io.Writer) error { return wire.WriteFrame(w, wire.Hello{ConversationID: "conv-m"}) }},
		{"unknown field", func(w io.Writer) error {
			return wire.WriteFrame(w, map[string]string{"conversationId": "conv-m", "token": "x", "admin": "true"})
		}},
		{"not json", func(w io.Writer) error { _, err := w.Write([]byte{0, 0, 0, 3, 'a', 'b', 'c'}); return err }},
		{"oversize", func(w io.Writer) error { _, err := w.Write([]byte{0, 1, 0, 0}); return err }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := newRawGuest(t).tlsDial(t, b.SocketPath, b.SupervisorFingerprint)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.write(conn); err != nil {
				t.Fatal(err)
			}
			var rep wire.Reply
			if err := wire.ReadFrame(conn, &rep); err != nil || rep.OK || rep.Reason != wire.ReasonMalformedHello {
				t.Fatalf("reply %+v, err %v", rep, err)
			}
			e.waitRefusal(wire.ReasonMalformedHello, uint64(i+1))
		})
	}
	// None of these touched the real token.
	dialServe(t, b)
	waitGuest(t, e.g, "conv-m")
}

func TestBadClientCertificate(t *testing.T) {
	e := newEnv(t)
	b := e.prepare("conv-k")
	cert := ecdsaCert(t)
	rg := &rawGuest{cert: &cert}
	if _, _, err := rg.hello(t, b.SocketPath, b.SupervisorFingerprint, wire.Hello{ConversationID: "conv-k", LaunchToken: b.LaunchToken}); err == nil {
		t.Fatal("an ECDSA client certificate was admitted")
	}
	e.waitRefusal(wire.ReasonBadClientCert, 1)
	e.goodGuestConnects("conv-k2")
}

func TestWrongProtocol(t *testing.T) {
	e := newEnv(t)
	b := e.prepare("conv-alpn")
	rg := newRawGuest(t)
	rg.noALPN = true
	if rep, _, err := rg.hello(t, b.SocketPath, b.SupervisorFingerprint, wire.Hello{ConversationID: "conv-alpn", LaunchToken: b.LaunchToken}); err == nil {
		t.Fatalf("a client without the %s protocol got a reply: %+v", wire.ALPN, rep)
	}
	e.waitRefusal(wire.ReasonProtocol, 1)
	// The hello was never read, so the token still admits the real guest.
	dialServe(t, b)
	waitGuest(t, e.g, "conv-alpn")
}

func TestReleaseEndsConversation(t *testing.T) {
	e := newEnv(t)
	b := e.prepare("conv-x")
	unused := e.prepare("conv-x") // a second, never presented token
	s := dialServe(t, b)
	gc := waitGuest(t, e.g, "conv-x")
	if err := e.g.Release("conv-x"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gc.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("guest connection survived Release")
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("guest session survived Release")
	}
	if _, err := os.Stat(filepath.Dir(b.SocketPath)); !os.IsNotExist(err) {
		t.Fatalf("conversation dir still there: %v", err)
	}
	if snap := e.store.snapshot(); len(snap) != 0 {
		t.Fatalf("store still holds %v after Release", keys(snap))
	}
	if _, err := s.Redial(context.Background()); err == nil {
		t.Fatal("redial after Release succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := e.g.WaitGuest(ctx, "conv-x"); !errors.Is(err, gateway.ErrNotPrepared) {
		t.Fatalf("WaitGuest after Release: %v", err)
	}
	_ = unused
	if err := e.g.Release("conv-x"); err != nil {
		t.Fatalf("second Release: %v", err)
	}
}

func TestWaitGuestHonoursContext(t *testing.T) {
	e := newEnv(t)
	e.prepare("conv-w")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.g.WaitGuest(ctx, "conv-w"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if _, err := e.g.WaitGuest(context.Background(), "never-prepared"); !errors.Is(err, gateway.ErrNotPrepared) {
		t.Fatalf("err = %v", err)
	}
}

func TestPrepareValidatesID(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"", "..", "../x", "a/b", ".hidden", strings.Repeat("a", 64), "sp ace"} {
		if _, err := e.g.Prepare(context.Background(), id); err == nil {
			t.Errorf("Prepare(%q) accepted", id)
		}
	}
}

// TestPrepareMirrorOutput: the launch asks the guest to mirror its CLI's
// output into the container log only when the gateway is told to.
func TestPrepareMirrorOutput(t *testing.T) {
	for _, mirror := range []bool{false, true} {
		e := newEnv(t, func(o *gateway.Options) { o.MirrorOutput = mirror })
		l, err := e.g.Prepare(context.Background(), "conv-mirror")
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := l.Env[wire.EnvMirrorOutput]; ok != mirror || (mirror && v != "1") {
			t.Errorf("MirrorOutput=%v: launch env %s=%q (set %v)", mirror, wire.EnvMirrorOutput, v, ok)
		}
	}
}

func TestKeyPersistsAndIsPrivate(t *testing.T) {
	e := newEnv(t)
	fp := e.g.Fingerprint()
	if !wire.ValidFingerprint(fp) {
		t.Fatalf("fingerprint %q", fp)
	}
	path := filepath.Join(e.opts.DataDir, "keys", "gateway-ed25519.pem")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v %v", fi, err)
	}
	if di, err := os.Stat(filepath.Dir(path)); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("key dir %v %v", di, err)
	}
	if err := e.g.Close(); err != nil {
		t.Fatal(err)
	}
	if g2 := e.newGateway(); g2.Fingerprint() != fp {
		t.Fatalf("fingerprint changed across restart: %s → %s", fp, g2.Fingerprint())
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.New(e.opts); err == nil || !strings.Contains(err.Error(), "mode") {
		t.Fatalf("a world-readable key was accepted: %v", err)
	}
}

func TestClosedGateway(t *testing.T) {
	e := newEnv(t)
	if err := e.g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.g.Prepare(context.Background(), "c"); !errors.Is(err, gateway.ErrClosed) {
		t.Fatalf("Prepare after Close: %v", err)
	}
	if _, err := e.g.WaitGuest(context.Background(), "c"); !errors.Is(err, gateway.ErrClosed) {
		t.Fatalf("WaitGuest after Close: %v", err)
	}
	if err := e.g.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestCloseLeavesNoGoroutines checks that Close ends every listener, handshake and connection goroutine, including
// a handshake stalled half-way.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	base := runtime.NumGoroutine()
	e := newEnv(t)
	var sessions []*sidechannel.Session
	for i := range 5 {
		b := e.prepare(fmt.Sprintf("conv-%d", i))
		s, err := sidechannel.Dial(context.Background(), b, quiet)
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
		go func() { _ = http.Serve(s, echoHandler(b.ConversationID)) }()
		get(t, waitGuest(t, e.g, b.ConversationID), "/x")
	}
	stalled := dialUnix(t, e.prepare("conv-stall").SocketPath) // never speaks
	eventually(t, 5*time.Second, func() error {                // its handshake goroutine is waiting for the first record
		if e.g.Stats().Refused[wire.ReasonTimeout] != 0 {
			return errors.New("stalled connection already timed out")
		}
		if !strings.Contains(stackDump(), "crypto/tls.(*Conn).HandshakeContext") {
			return errors.New("no handshake in progress yet")
		}
		return nil
	})
	if err := e.g.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range sessions {
		<-s.Done() // the guests see the supervisor go away
	}
	assertClosedByPeer(t, stalled)
	_ = stalled.Close()
	eventually(t, 10*time.Second, func() error {
		if n := runtime.NumGoroutine(); n > base {
			return fmt.Errorf("%d goroutines, %d before", n, base)
		}
		return nil
	})
}

// TestSocketAppearsPrivateWhateverTheContainerLeftThere: the socket is made
// and chmodded in a host-only directory and moved into the mounted one, so a
// link a container's root left at its path is replaced, never followed, and
// the host file it pointed at keeps its mode.
func TestSocketAppearsPrivateWhateverTheContainerLeftThere(t *testing.T) {
	e := newEnv(t)
	victim := filepath.Join(t.TempDir(), "host-file")
	if err := os.WriteFile(victim, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(e.opts.DataDir, "run") // the default RunDir
	dir := filepath.Join(runDir, "conv", "conv-link")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, wire.SocketName)); err != nil {
		t.Fatal(err)
	}
	l, err := e.g.Prepare(context.Background(), "conv-link")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(l.HostSocket)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v, want a 0600 socket", fi, err)
	}
	if vi, _ := os.Stat(victim); vi.Mode().Perm() != 0o644 {
		t.Fatalf("the host file became %v", vi.Mode().Perm())
	}
	if left, _ := os.ReadDir(filepath.Join(runDir, "stage")); len(left) != 0 {
		t.Fatalf("staging dir holds %v", left)
	}
}
