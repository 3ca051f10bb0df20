package supervisor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/store"
)

// startSupervisor runs a supervisor on dataDir until the test ends.
func startSupervisor(t testing.TB, cfg Config) *Supervisor {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	readyc := make(chan *Supervisor, 1)
	errc := make(chan error, 1)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Ready = func(s *Supervisor) { readyc <- s }
	cfg.skipNameValidation = true
	go func() { errc <- Run(ctx, cfg) }()
	select {
	case s := <-readyc:
		t.Cleanup(func() {
			cancel()
			if err := <-errc; err != nil {
				t.Errorf("supervisor: %v", err)
			}
		})
		return s
	case err := <-errc:
		cancel()
		t.Fatalf("supervisor did not start: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("supervisor did not become ready")
	}
	return nil
}

func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
}

func TestUnixSocketIsOwnerOnlyAndServes(t *testing.T) {
	dir := t.TempDir()
	startSupervisor(t, Config{DataDir: dir})
	sock := layout.Dir(dir).Socket()
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	c := unixClient(sock)
	for _, path := range []string{"/healthz", "/readyz", "/apis/aicli.dev/v1alpha1/namespaces/default/agents", "/metrics"} {
		resp, err := c.Get("http://supervisor" + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
		if path == "/metrics" && !strings.Contains(string(body), "aicli_apiserver_requests_total") {
			t.Errorf("metrics lack the API counters")
		}
	}
}

func TestSecondSupervisorOnSameDataDirFailsClearly(t *testing.T) {
	dir := t.TempDir()
	startSupervisor(t, Config{DataDir: dir})
	err := Run(context.Background(), Config{DataDir: dir, Socket: filepath.Join(t.TempDir(), "other.sock"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), skipNameValidation: true})
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second supervisor: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the data dir", err)
	}
}

func TestTCPNeedsTokenBoundToNamespaces(t *testing.T) {
	dir := t.TempDir()
	tokens := layout.Dir(dir).Tokens()
	teamA, err := CreateToken(tokens, apiserver.Token{Name: "team-a", Namespaces: []string{"team-a"}})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := CreateToken(tokens, apiserver.Token{Name: "admin", Namespaces: []string{"*"}, Role: "cluster-admin"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CreateToken(tokens, apiserver.Token{Name: "team-a", Namespaces: []string{"x"}}); err == nil {
		t.Fatal("duplicate token name accepted")
	}
	raw, _ := os.ReadFile(tokens)
	if strings.Contains(string(raw), teamA) {
		t.Fatal("token file holds a raw token")
	}
	s := startSupervisor(t, Config{DataDir: dir, Listen: "127.0.0.1:0"})

	pem, err := os.ReadFile(filepath.Join(layout.Dir(dir).TLS(), "server.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + s.TCPAddr.String() + "/apis/aicli.dev/v1alpha1"
	cases := []struct {
		name, token, path string
		code              int
	}{
		{"no token", "", "/namespaces/team-a/agents", 401},
		{"wrong token", "not-a-token", "/namespaces/team-a/agents", 401},
		{"own namespace", teamA, "/namespaces/team-a/agents", 200},
		{"other namespace", teamA, "/namespaces/team-b/agents", 403},
		{"all namespaces", teamA, "/agents", 403},
		{"admin all namespaces", admin, "/agents", 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", url+tc.path, nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("%d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			if tc.code >= 400 && !strings.Contains(string(body), `"kind":"Status"`) {
				t.Errorf("error is not a Status: %s", body)
			}
		})
	}
	// Plain HTTP on the TLS port is refused.
	resp, err := http.Get("http://" + s.TCPAddr.String() + "/healthz")
	if err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP accepted on the TLS listener")
	}
}
