package gateway_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"aicli.dev/aicli/guest/sidechannel"
	"aicli.dev/aicli/guest/sidechannel/wire"
	"aicli.dev/aicli/internal/gateway"
)

// memStore is the map-backed TokenStore seam for tests.
type memStore struct {
	mu   sync.Mutex
	kv   map[string][]byte
	puts int
	fail error // when set, every call fails with it (a store outage)
}

func (s *memStore) setFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

func newMemStore() *memStore { return &memStore{kv: make(map[string][]byte)} }

func (s *memStore) PutKV(_ context.Context, bucket, key string, val []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.kv[bucket+"/"+key] = bytes.Clone(val)
	s.puts++
	return nil
}

func (s *memStore) TakeKV(_ context.Context, bucket, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	v, ok := s.kv[bucket+"/"+key]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "aicli.dev", Resource: "kv"}, bucket+"/"+key)
	}
	delete(s.kv, bucket+"/"+key)
	return v, nil
}

// snapshot returns every key and value, for assertions on what is stored.
func (s *memStore) snapshot() map[string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]byte, len(s.kv))
	for k, v := range s.kv {
		out[k] = bytes.Clone(v)
	}
	return out
}

// logBuf is a goroutine-safe log sink.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is one test's gateway with its store, logs and data dir.
type env struct {
	t     *testing.T
	g     *gateway.Gateway
	store *memStore
	logs  *logBuf
	opts  gateway.Options
}

func newEnv(t *testing.T, mutate ...func(*gateway.Options)) *env {
	t.Helper()
	e := &env{t: t, store: newMemStore(), logs: &logBuf{}}
	e.opts = gateway.Options{
		DataDir: t.TempDir(),
		Tokens:  e.store,
		Logger:  slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, m := range mutate {
		m(&e.opts)
	}
	e.g = e.newGateway()
	return e
}

// newGateway starts a gateway on the env's options (a restart when one ran before).
func (e *env) newGateway() *gateway.Gateway {
	e.t.Helper()
	g, err := gateway.New(e.opts)
	if err != nil {
		e.t.Fatalf("gateway.New: %v", err)
	}
	e.t.Cleanup(func() { _ = g.Close() })
	return g
}

// prepare prepares conv and returns a bootstrap that reaches the host-side socket.
func (e *env) prepare(conv string) sidechannel.Bootstrap {
	e.t.Helper()
	l, err := e.g.Prepare(context.Background(), conv)
	if err != nil {
		e.t.Fatalf("Prepare(%s): %v", conv, err)
	}
	return hostBootstrap(l)
}

func hostBootstrap(l *gateway.Launch) sidechannel.Bootstrap {
	return sidechannel.Bootstrap{
		SocketPath:            l.HostSocket,
		SupervisorFingerprint: l.Env[wire.EnvFingerprint],
		ConversationID:        l.Env[wire.EnvConversationID],
		LaunchToken:           l.Env[wire.EnvLaunchToken],
	}
}

// refusals returns the refusal count for reason.
func (e *env) refusals(r wire.Reason) uint64 { return e.g.Stats().Refused[r] }

// waitRefusal waits until the gateway has counted want refusals with reason r and logged one.
func (e *env) waitRefusal(r wire.Reason, want uint64) {
	e.t.Helper()
	eventually(e.t, 5*time.Second, func() error {
		if got := e.refusals(r); got != want {
			return fmt.Errorf("refusals[%s] = %d, want %d (all: %v)", r, got, want, e.g.Stats().Refused)
		}
		if !strings.Contains(e.logs.String(), `"reason":"`+string(r)+`"`) {
			return fmt.Errorf("no refusal log line with reason %s", r)
		}
		return nil
	})
}

// assertNoSecretsLogged fails when any given secret appears in the logs.
func (e *env) assertNoSecretsLogged(secrets ...string) {
	e.t.Helper()
	logs := e.logs.String()
	for _, s := range secrets {
		if s != "" && strings.Contains(logs, s) {
			e.t.Fatalf("a secret appears in the logs")
		}
	}
}

// goodGuestConnects proves the gateway still serves: a fresh conversation's guest is admitted and answers.
func (e *env) goodGuestConnects(conv string) {
	e.t.Helper()
	b := e.prepare(conv)
	s := dialServe(e.t, b)
	gc := waitGuest(e.t, e.g, conv)
	if gc.GuestFingerprint() != s.Fingerprint() {
		e.t.Fatalf("bound fingerprint %s, guest has %s", gc.GuestFingerprint(), s.Fingerprint())
	}
	if got := get(e.t, gc, "/echo"); got != "guest "+conv+" /echo" {
		e.t.Fatalf("reply %q", got)
	}
}

// echoHandler answers every request with the conversation id and path.
func echoHandler(conv string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = fmt.Fprintf(w, "guest %s %s", conv, r.URL.Path)
	})
}

// dialServe dials with the real guest client and serves echoHandler on the session until the test ends.
func dialServe(t *testing.T, b sidechannel.Bootstrap) *sidechannel.Session {
	t.Helper()
	s, err := sidechannel.Dial(context.Background(), b, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	srv := &http.Server{Handler: echoHandler(b.ConversationID)}
	go func() { _ = srv.Serve(s) }()
	t.Cleanup(func() { _ = srv.Close(); _ = s.Close() })
	return s
}

func waitGuest(t *testing.T, g *gateway.Gateway, conv string) *gateway.GuestConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gc, err := g.WaitGuest(ctx, conv)
	if err != nil {
		t.Fatalf("WaitGuest(%s): %v", conv, err)
	}
	return gc
}

func get(t *testing.T, gc *gateway.GuestConn, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, gateway.BaseURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := gc.HTTPClient().Do(req)
	if err != nil {
		t.Fatalf("GET %s over the side channel: %v", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// eventually polls f until it returns nil or the deadline passes.
func eventually(t *testing.T, within time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %v", within, err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// rawGuest is a hand-driven guest for attack tests: it speaks the wire protocol with any key (or none).
type rawGuest struct {
	cert   *tls.Certificate
	fp     string
	noALPN bool // offer no application protocol
}

func newRawGuest(t *testing.T) *rawGuest {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := wire.SelfSigned(key, "raw-guest")
	if err != nil {
		t.Fatal(err)
	}
	fp, err := wire.KeyFingerprint(key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return &rawGuest{cert: &cert, fp: fp}
}

// tlsDial connects to sock and completes a TLS handshake that pins pin.
func (r *rawGuest) tlsDial(t *testing.T, sock, pin string) (*tls.Conn, error) {
	t.Helper()
	raw, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = raw.Close() })
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	conf := &tls.Config{
		MinVersion:         tls.VersionTLS13,
		NextProtos:         []string{wire.ALPN},
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			fp, err := wire.PeerFingerprint(cs)
			if err != nil {
				return err
			}
			if fp != pin {
				return errors.New("pin mismatch")
			}
			return nil
		},
	}
	if r.cert != nil {
		conf.Certificates = []tls.Certificate{*r.cert}
	}
	if r.noALPN {
		conf.NextProtos = nil
	}
	tc := tls.Client(raw, conf)
	if err := tc.Handshake(); err != nil {
		return nil, err
	}
	return tc, nil
}

// hello performs a full dial + hello and returns the supervisor's reply.
func (r *rawGuest) hello(t *testing.T, sock, pin string, h wire.Hello) (wire.Reply, *tls.Conn, error) {
	t.Helper()
	tc, err := r.tlsDial(t, sock, pin)
	if err != nil {
		return wire.Reply{}, nil, err
	}
	if err := wire.WriteFrame(tc, h); err != nil {
		return wire.Reply{}, nil, err
	}
	var rep wire.Reply
	if err := wire.ReadFrame(tc, &rep); err != nil {
		return wire.Reply{}, nil, err
	}
	return rep, tc, nil
}

func dialUnix(t *testing.T, sock string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// assertClosedByPeer reads until the supervisor closes the connection.
func assertClosedByPeer(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("supervisor kept the connection open")
	}
}

// ecdsaCert is a self-signed P-256 certificate: a well-formed client certificate of the wrong key type.
func ecdsaCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
