package sidechannel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"aicli.dev/aicli/guest/sidechannel"
	"aicli.dev/aicli/guest/sidechannel/wire"
	"aicli.dev/aicli/internal/gateway"
)

var quiet = slog.New(slog.DiscardHandler)

// memStore is a map-backed gateway.TokenStore.
type memStore struct{ kv map[string][]byte }

func (s *memStore) PutKV(_ context.Context, b, k string, v []byte) error {
	s.kv[b+"/"+k] = v
	return nil
}

func (s *memStore) TakeKV(_ context.Context, b, k string) ([]byte, error) {
	v, ok := s.kv[b+"/"+k]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "aicli.dev", Resource: "kv"}, k)
	}
	delete(s.kv, b+"/"+k)
	return v, nil
}

func newGateway(t *testing.T, dataDir string, store gateway.TokenStore) *gateway.Gateway {
	t.Helper()
	g, err := gateway.New(gateway.Options{DataDir: dataDir, Tokens: store, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

func bootstrapFor(t *testing.T, g *gateway.Gateway, conv string) sidechannel.Bootstrap {
	t.Helper()
	l, err := g.Prepare(context.Background(), conv)
	if err != nil {
		t.Fatal(err)
	}
	return sidechannel.Bootstrap{
		SocketPath:            filepath.Join(l.HostDir, wire.SocketName),
		SupervisorFingerprint: g.Fingerprint(),
		ConversationID:        conv,
		LaunchToken:           l.Env[wire.EnvLaunchToken],
	}
}

func hello(conv string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = fmt.Fprintf(w, "%s:%s", conv, r.URL.Path) })
}

func call(t *testing.T, g *gateway.Gateway, conv, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gc, err := g.WaitGuest(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, gateway.BaseURL+path, nil)
	resp, err := gc.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// runServe starts Serve and returns a function that cancels it and returns its result.
func runServe(t *testing.T, b sidechannel.Bootstrap) (stop func() error, result <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- sidechannel.Serve(ctx, b, hello(b.ConversationID), quiet) }()
	t.Cleanup(cancel)
	return func() error {
		cancel()
		select {
		case err := <-res:
			return err
		case <-time.After(10 * time.Second):
			return errors.New("Serve did not return")
		}
	}, res
}

// TestServeWaitsForSupervisor starts the guest while no supervisor listens (as during a supervisor restart): it
// keeps retrying and gets in once the socket appears, with the launch token it was started with.
func TestServeWaitsForSupervisor(t *testing.T) {
	dataDir, store := t.TempDir(), &memStore{kv: map[string][]byte{}}
	g := newGateway(t, dataDir, store)
	b := bootstrapFor(t, g, "conv-w")
	if err := g.Close(); err != nil { // socket gone, token still stored
		t.Fatal(err)
	}
	stop, _ := runServe(t, b)
	g2 := newGateway(t, dataDir, store)
	if _, err := g2.Prepare(context.Background(), "conv-w"); err != nil {
		t.Fatal(err)
	}
	if got := call(t, g2, "conv-w", "/a"); got != "conv-w:/a" {
		t.Fatalf("reply %q", got)
	}
	if err := stop(); err != nil {
		t.Fatalf("Serve after cancel: %v", err)
	}
	// The guest is gone once Serve returned.
	gc, ok := g2.Guest("conv-w")
	if ok {
		select {
		case <-gc.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("supervisor still sees the guest after Serve returned")
		}
	}
}

func TestServeRefusalIsPermanent(t *testing.T) {
	g := newGateway(t, t.TempDir(), &memStore{kv: map[string][]byte{}})
	b := bootstrapFor(t, g, "conv-p")
	s, err := sidechannel.Dial(context.Background(), b, quiet) // spends the token
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	_, res := runServe(t, b)
	select {
	case err := <-res:
		var refused *sidechannel.RefusedError
		if !errors.As(err, &refused) || refused.Reason != wire.ReasonTokenUnknown {
			t.Fatalf("Serve returned %v, want a token_unknown refusal", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve kept retrying a refused token")
	}
}

func TestServeWrongPinIsPermanent(t *testing.T) {
	g := newGateway(t, t.TempDir(), &memStore{kv: map[string][]byte{}})
	b := bootstrapFor(t, g, "conv-x")
	other := newGateway(t, t.TempDir(), &memStore{kv: map[string][]byte{}})
	b.SupervisorFingerprint = other.Fingerprint() // a real, but different, supervisor key
	_, res := runServe(t, b)
	select {
	case err := <-res:
		if !errors.Is(err, sidechannel.ErrSupervisorMismatch) {
			t.Fatalf("Serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve kept talking to an unpinned supervisor")
	}
}

func TestSessionRedialKeepsKey(t *testing.T) {
	g := newGateway(t, t.TempDir(), &memStore{kv: map[string][]byte{}})
	b := bootstrapFor(t, g, "conv-r")
	var logs strings.Builder
	s, err := sidechannel.Dial(context.Background(), b, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "connected to supervisor") || strings.Contains(logs.String(), b.LaunchToken) {
		t.Fatalf("guest log missing the connect line or leaking the token:\n%s", logs.String())
	}
	if s.ConversationID() != "conv-r" || !wire.ValidFingerprint(s.Fingerprint()) {
		t.Fatalf("session %s %s", s.ConversationID(), s.Fingerprint())
	}
	_ = s.Close()
	<-s.Done()
	s2, err := s.Redial(context.Background())
	if err != nil {
		t.Fatalf("Redial: %v", err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	if s2.Fingerprint() != s.Fingerprint() {
		t.Fatal("Redial changed the guest key")
	}
	srv := &http.Server{Handler: hello("conv-r")}
	go func() { _ = srv.Serve(s2) }()
	t.Cleanup(func() { _ = srv.Close() })
	if got := call(t, g, "conv-r", "/z"); got != "conv-r:/z" {
		t.Fatalf("reply %q", got)
	}
	// A fresh Dial (new key) cannot reuse the spent launch token.
	if _, err := sidechannel.Dial(context.Background(), b, quiet); err == nil {
		t.Fatal("launch token reused")
	}
}

func TestDialValidatesBootstrap(t *testing.T) {
	if _, err := sidechannel.Dial(context.Background(), sidechannel.Bootstrap{SocketPath: "/nonexistent"}, quiet); err == nil {
		t.Fatal("incomplete bootstrap accepted")
	}
	b := sidechannel.Bootstrap{SocketPath: filepath.Join(t.TempDir(), "none.sock"), SupervisorFingerprint: goodFP, ConversationID: "c", LaunchToken: "t"}
	if _, err := sidechannel.Dial(context.Background(), b, quiet); err == nil {
		t.Fatal("dial to a missing socket succeeded")
	}
}
