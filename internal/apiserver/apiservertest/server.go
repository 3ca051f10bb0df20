package apiservertest

import (
	"context"
	"encoding/pem"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/admission"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/store"
)

// Server is the supervisor's API server over a store in a temporary directory.
type Server struct {
	// Store is the server's store; tests write through it as a controller does.
	Store *store.Store
	// API is the server: register extra endpoints (convapi) before serving.
	API *apiserver.Server

	mu       sync.Mutex
	requests map[string]int
	before   func(*http.Request)
	watches  map[*context.CancelFunc]struct{}
}

// New composes the server as the supervisor does (the same admitters, no
// metrics) over a fresh store that is closed when the test ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	st, err := store.Open(tb.TempDir(), store.Options{MemTableSize: 4 << 20})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	return &Server{
		Store:    st,
		API:      apiserver.New(apiserver.Options{Store: st, Logger: slog.New(slog.DiscardHandler), Admitters: admission.All(st)}),
		requests: map[string]int{},
		watches:  map[*context.CancelFunc]struct{}{},
	}
}

// handler is the API behind authn, with the test hooks in front of it.
func (s *Server) handler(authn func(*http.Request) (*apiserver.Principal, error)) http.Handler {
	api := apiserver.Authenticated(s.API.Handler(), authn)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests[r.Method+" "+r.URL.Path]++
		before := s.before
		s.mu.Unlock()
		if before != nil {
			before(r)
		}
		if r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true" {
			ctx, cancel := context.WithCancel(r.Context())
			s.mu.Lock()
			s.watches[&cancel] = struct{}{}
			s.mu.Unlock()
			defer func() {
				s.mu.Lock()
				delete(s.watches, &cancel)
				s.mu.Unlock()
				cancel()
			}()
			r = r.WithContext(ctx)
		}
		api.ServeHTTP(w, r)
	})
}

// ServeUnix serves the API on a unix socket as the local admin, as the
// supervisor does, until the test ends, and returns its unix:// address.
func (s *Server) ServeUnix(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "apisrv-") // short: unix socket paths are limited to ~100 bytes
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "supervisor.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		tb.Fatal(err)
	}
	hs := &httptest.Server{Listener: ln, Config: &http.Server{Handler: s.handler(
		func(*http.Request) (*apiserver.Principal, error) { return apiserver.LocalAdmin, nil })}}
	hs.Start()
	tb.Cleanup(func() { s.closeServer(hs) })
	return "unix://" + sock
}

// ServeTLS serves the API over HTTPS on loopback where only the bearer tokens
// in tokens are accepted, each for the namespaces it maps to ("*" for all).
// It returns the https:// address and a PEM file of the server certificate.
func (s *Server) ServeTLS(tb testing.TB, tokens map[string][]string) (url, caFile string) {
	tb.Helper()
	entries := map[string]apiserver.Token{}
	for raw, namespaces := range tokens {
		entries[raw] = apiserver.Token{Name: "test", Namespaces: namespaces}
	}
	return s.ServeTLSTokens(tb, entries)
}

// ServeTLSTokens is ServeTLS with whole token entries, by raw token (their
// SHA256 is filled in).
func (s *Server) ServeTLSTokens(tb testing.TB, tokens map[string]apiserver.Token) (url, caFile string) {
	tb.Helper()
	tf := &apiserver.TokenFile{}
	for raw, t := range tokens {
		t.SHA256 = apiserver.HashToken(raw)
		tf.Tokens = append(tf.Tokens, t)
	}
	hs := httptest.NewTLSServer(s.handler(apiserver.NewTokenAuthenticator(tf).Authenticate))
	tb.Cleanup(func() { s.closeServer(hs) })
	caFile = filepath.Join(tb.TempDir(), "ca.crt")
	block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw})
	if err := os.WriteFile(caFile, block, 0o600); err != nil {
		tb.Fatal(err)
	}
	return hs.URL, caFile
}

// ServeLoopback serves the API on plain loopback HTTP with every request
// authenticated as p, and returns its http:// address.
func (s *Server) ServeLoopback(tb testing.TB, p *apiserver.Principal) string {
	tb.Helper()
	hs := httptest.NewServer(s.handler(func(*http.Request) (*apiserver.Principal, error) { return p, nil }))
	tb.Cleanup(func() { s.closeServer(hs) })
	return hs.URL
}

// closeServer ends the watch streams first: httptest waits for every request.
func (s *Server) closeServer(hs *httptest.Server) {
	s.EndWatches()
	hs.CloseClientConnections()
	hs.Close()
}

// BeforeServe sets a function run at the start of every request, before the
// server looks at it (tests use it to interleave concurrent writes).
func (s *Server) BeforeServe(fn func(*http.Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before = fn
}

// Requests returns how many requests were served as "METHOD path" (the path
// without its query).
func (s *Server) Requests(method, path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[method+" "+path]
}

// Watches returns how many watch streams are open.
func (s *Server) Watches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watches)
}

// EndWatches ends every open watch stream cleanly, as a server recycling
// long-lived requests does; clients are expected to resume.
func (s *Server) EndWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for cancel := range s.watches {
		(*cancel)()
	}
}

// Compact trims the store's watch log: a watch from any version older than
// the current one then fails with 410 Gone.
func (s *Server) Compact(tb testing.TB) {
	tb.Helper()
	if err := s.Store.Compact(context.Background(), s.Store.CurrentRV()+1); err != nil {
		tb.Fatalf("compact: %v", err)
	}
}

// Object returns the stored object, or nil when there is none.
func (s *Server) Object(tb testing.TB, plural, namespace, name string) *unstructured.Unstructured {
	tb.Helper()
	obj, err := s.Store.Get(context.Background(), plural, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		tb.Fatalf("get %s %s/%s: %v", plural, namespace, name, err)
	}
	return obj
}

// Mutate changes a stored object as a controller does: fn edits a copy, then
// its metadata and spec are written with Update and its status with
// UpdateStatus, each only when fn changed it. Removing the last finalizer of
// a deleting object deletes it.
func (s *Server) Mutate(tb testing.TB, plural, namespace, name string, fn func(*unstructured.Unstructured)) {
	tb.Helper()
	ctx := context.Background()
	cur, err := s.Store.Get(ctx, plural, namespace, name)
	if err != nil {
		tb.Fatalf("mutate %s %s/%s: %v", plural, namespace, name, err)
	}
	next := cur.DeepCopy()
	fn(next)
	written, err := s.Store.Update(ctx, plural, next.DeepCopy())
	if err != nil {
		tb.Fatalf("mutate %s %s/%s: update: %v", plural, namespace, name, err)
	}
	if equality.Semantic.DeepEqual(next.Object["status"], cur.Object["status"]) {
		return
	}
	next.SetResourceVersion(written.GetResourceVersion())
	if _, err := s.Store.UpdateStatus(ctx, plural, next); err != nil {
		tb.Fatalf("mutate %s %s/%s: update status: %v", plural, namespace, name, err)
	}
}
