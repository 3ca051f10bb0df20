package egress_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/internal/egress"
)

// TestProviderSSERoundTrip sends a request to the guest's provider port and checks that it reaches the
// provider's base path with the provider's Host, and that an SSE response streams: the first event is read by
// the client while the provider is still holding back the second.
func TestProviderSSERoundTrip(t *testing.T) {
	release := make(chan struct{})
	var gotHost, gotPath, gotBody, gotAuth string
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotHost, gotPath, gotBody, gotAuth = r.Host, r.URL.Path, string(b), r.Header.Get("X-Api-Key")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprint(w, "event: message_start\ndata: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(10 * time.Second):
			return
		}
		_, _ = fmt.Fprint(w, "event: message_stop\ndata: {\"n\":2}\n\n")
	}))
	t.Cleanup(prov.Close)
	e := newEnv(t, egress.Options{})
	e.policy(t, prov.URL+"/api")

	req, _ := http.NewRequest(http.MethodPost, e.provider+"/v1/messages", strings.NewReader(`{"stream":true}`))
	req.Header.Set("X-Api-Key", "sk-test")
	resp, err := newClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	first := readEvent(t, br)
	if !strings.Contains(first, "message_start") {
		t.Fatalf("first event %q", first)
	}
	close(release) // only now does the provider send the rest: the first event was not buffered behind it
	if second := readEvent(t, br); !strings.Contains(second, "message_stop") {
		t.Fatalf("second event %q", second)
	}
	if gotHost != strings.TrimPrefix(prov.URL, "http://") || gotPath != "/api/v1/messages" ||
		gotBody != `{"stream":true}` || gotAuth != "sk-test" {
		t.Fatalf("provider saw host %q path %q body %q key %q", gotHost, gotPath, gotBody, gotAuth)
	}
	if st := e.server.Stats(); st.Admitted != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// readEvent reads one SSE event (up to its blank line).
func readEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read event: %v (so far %q)", err, b.String())
		}
		if line == "\n" {
			return b.String()
		}
		b.WriteString(line)
	}
}

// TestProviderHTTPSAndKeepAlive reaches an HTTPS provider (the supervisor originates TLS) with two requests on
// one keep-alive connection to the provider port, which is one egress stream.
func TestProviderHTTPSAndKeepAlive(t *testing.T) {
	prov := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "tls=%v path=%s", r.TLS != nil, r.URL.Path)
	}))
	t.Cleanup(prov.Close)
	e := newEnv(t, egress.Options{ProviderTransport: prov.Client().Transport})
	e.policy(t, prov.URL)
	client := newClient(t)
	for _, p := range []string{"/a", "/b"} {
		resp, err := client.Get(e.provider + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if string(body) != "tls=true path="+p {
			t.Fatalf("body %q", body)
		}
	}
	if st := e.server.Stats(); st.Admitted != 1 {
		t.Fatalf("two requests should share one stream: %+v", st)
	}
}

// TestProviderWithoutEndpointIsRefused: an agent without a provider endpoint gets a 403 on the provider port and
// the refusal is reported.
func TestProviderWithoutEndpointIsRefused(t *testing.T) {
	e := newEnv(t, egress.Options{})
	e.policy(t, "")
	resp, err := newClient(t).Get(e.provider + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "no_provider") {
		t.Fatalf("status %d body %q", resp.StatusCode, body)
	}
	waitFor(t, "the report", func() bool { return len(e.denials.all()) == 1 })
	if d := e.denials.all()[0]; d.conv != e.conv || d.target != "provider" || !strings.HasPrefix(d.reason, "no_provider") {
		t.Fatalf("denial %+v", d)
	}
}

// newClient is a client with its own connection pool, closed when the test ends.
func newClient(t *testing.T) *http.Client {
	tr := &http.Transport{MaxConnsPerHost: 1}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}
