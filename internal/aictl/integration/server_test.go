package integration

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"aicli.dev/aicli/controllers"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/store"
)

// realToken may touch namespace it-tls only.
const realToken = "it-tls-token"

// realServer is the supervisor's API stack, composed in-process the way
// aicli-supervisor composes it: a pebble store in a temporary data dir, the
// API server on a unix socket (local admin) and on a TLS listener with
// namespace-bound bearer tokens, and the controllers (without a container
// runtime, so conversations stay NotImplemented while agents really become Ready).
type realServer struct {
	unix   string // unix://…/supervisor.sock
	tcp    string // https://127.0.0.1:port
	caFile string
	store  *store.Store
}

func startReal(tb testing.TB) *realServer { return startRealWith(tb, true) }

// startRealWith starts the stack, with or without the controllers.
func startRealWith(tb testing.TB, withControllers bool) *realServer {
	tb.Helper()
	// A short directory: unix socket paths are limited to ~100 bytes.
	dir, err := os.MkdirTemp("", "aictl-it-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	data := layout.Dir(dir)
	st, err := store.Open(data.Store(), store.Options{})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if withControllers {
		if err := controllers.Start(ctx, controllers.Options{Store: st, DataDir: data, SupervisorID: "it", Logger: log,
			SkipNameValidation: true}); err != nil {
			cancel()
			tb.Fatalf("controllers: %v", err)
		}
	}
	api := apiserver.New(apiserver.Options{Store: st, Logger: log}).Handler()

	ln, err := net.Listen("unix", data.Socket())
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	unixSrv := &http.Server{Handler: apiserver.Authenticated(api, func(*http.Request) (*apiserver.Principal, error) {
		return apiserver.LocalAdmin, nil
	})}
	served := make(chan error, 1)
	go func() { served <- unixSrv.Serve(ln) }()

	authn := apiserver.NewTokenAuthenticator(&apiserver.TokenFile{Tokens: []apiserver.Token{
		{Name: "it", SHA256: apiserver.HashToken(realToken), Namespaces: []string{"it-tls"}}}})
	tlsSrv := httptest.NewTLSServer(apiserver.Authenticated(api, authn.Authenticate))
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o600); err != nil {
		cancel()
		tb.Fatal(err)
	}

	tb.Cleanup(func() {
		tlsSrv.CloseClientConnections()
		tlsSrv.Close()
		_ = unixSrv.Close()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			tb.Errorf("unix server: %v", err)
		}
		cancel()
		if err := st.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	return &realServer{unix: "unix://" + data.Socket(), tcp: tlsSrv.URL, caFile: caFile, store: st}
}

func (s *realServer) String() string { return fmt.Sprintf("real server at %s", s.unix) }
