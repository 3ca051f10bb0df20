package integration

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"aicli.dev/aicli/controllers"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/convapi"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/liveguest"
)

// realToken may touch namespace it-tls only.
const realToken = "it-tls-token"

// realServer is the supervisor's API stack, composed in-process the way
// aicli-supervisor composes it: the API server over a pebble store in a
// temporary directory (apiservertest) with the conversation subresources,
// served on a unix socket (local admin) and on a TLS listener with
// namespace-bound bearer tokens, and the controllers (without a container
// runtime, so conversations stay NotImplemented while agents really become
// Ready).
type realServer struct {
	*apiservertest.Server
	unix   string // unix://…/supervisor.sock
	tcp    string // https://127.0.0.1:port
	caFile string
}

func startReal(tb testing.TB) *realServer { return startRealWith(tb, true) }

// startRealWith starts the stack, with or without the controllers.
func startRealWith(tb testing.TB, withControllers bool) *realServer {
	tb.Helper()
	srv := apiservertest.New(tb)
	log := slog.New(slog.DiscardHandler)
	if withControllers {
		ctx, cancel := context.WithCancel(context.Background())
		tb.Cleanup(cancel) // before the store closes
		if err := controllers.Start(ctx, controllers.Options{Store: srv.Store, DataDir: layout.Dir(tb.TempDir()),
			SupervisorID: "it", Logger: log, SkipNameValidation: true}); err != nil {
			tb.Fatalf("controllers: %v", err)
		}
	}
	convapi.New(convapi.Options{Store: srv.Store, Sessions: &liveguest.Registry{}, Logger: log}).Register(srv.API)
	s := &realServer{Server: srv, unix: srv.ServeUnix(tb)}
	s.tcp, s.caFile = srv.ServeTLS(tb, map[string][]string{realToken: {"it-tls"}})
	return s
}

func (s *realServer) String() string { return fmt.Sprintf("real server at %s", s.unix) }
