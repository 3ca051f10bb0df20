package egress_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/internal/egress"
)

// proxiedClient is an HTTP client that uses the guest's forward proxy, as a CLI with HTTPS_PROXY would.
func proxiedClient(t *testing.T, e *env, tlsConf *tls.Config) *http.Client {
	t.Helper()
	u, err := url.Parse(e.proxyURL)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: tlsConf}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// TestConnectToAllowedHTTPS: an HTTPS request through the forward proxy (CONNECT, then TLS end to end between
// the client and the loopback server) works when the host:port is on the allow-list.
func TestConnectToAllowedHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "hello %s over tls=%v", r.URL.Path, r.TLS != nil)
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t, egress.Options{})
	e.policy(t, "", strings.TrimPrefix(srv.URL, "https://"))
	c := proxiedClient(t, e, srv.Client().Transport.(*http.Transport).TLSClientConfig)
	resp, err := c.Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != "hello /x over tls=true" {
		t.Fatalf("body %q", body)
	}
	if got := e.dials.all(); len(got) != 1 || got[0] != strings.TrimPrefix(srv.URL, "https://") {
		t.Fatalf("dialed %v", got)
	}
	if len(e.denials.all()) != 0 {
		t.Fatalf("unexpected denials %v", e.denials.all())
	}
}

// TestConnectEchoHalfClose tunnels raw bytes both ways and checks that a client half-close reaches the target
// while the reply still flows back.
func TestConnectEchoHalfClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { _ = c.Close() }()
		b, _ := io.ReadAll(c) // until the client's half-close
		_, _ = c.Write([]byte("echo:" + string(b)))
	}()
	e := newEnv(t, egress.Options{})
	e.policy(t, "", ln.Addr().String())
	c, err := net.Dial("tcp", e.proxy.ProxyAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	// The payload follows the CONNECT head in the same write, as eager clients do.
	_, _ = fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\nping", ln.Addr())
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(br)
	if err != nil || string(got) != "echo:ping" {
		t.Fatalf("got %q err %v", got, err)
	}
}

// TestPlainHTTPThroughProxy forwards an absolute-form http:// request to an allowed origin.
func TestPlainHTTPThroughProxy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "plain %s %s proxyhdr=%q", r.Method, r.URL.RequestURI(), r.Header.Get("Proxy-Connection"))
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t, egress.Options{})
	e.policy(t, "", strings.TrimPrefix(srv.URL, "http://"))
	resp, err := proxiedClient(t, e, nil).Get(srv.URL + "/p?q=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != `plain GET /p?q=1 proxyhdr=""` {
		t.Fatalf("body %q", body)
	}
}

// TestDisallowedTargetsAreRefusedAndReported: a port not on the list, a host not on the list, and a
// conversation without a policy all get a 403; nothing is dialed (no name is resolved either: the dial seam is
// the only way out and it saw nothing); each refusal is reported once, repeats are coalesced.
func TestDisallowedTargetsAreRefusedAndReported(t *testing.T) {
	// A real listener on the forbidden port: it must never see a connection.
	forbidden, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = forbidden.Close() })
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := forbidden.Accept(); err == nil {
			accepted <- struct{}{}
			_ = c.Close()
		}
	}()
	_, fport, _ := net.SplitHostPort(forbidden.Addr().String())
	e := newEnv(t, egress.Options{})
	e.policy(t, "", "127.0.0.1:1", "*.allowed.test")

	connect := func(target string) (int, string) {
		t.Helper()
		c, err := net.Dial("tcp", e.proxy.ProxyAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		_, _ = fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", target)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		if err != nil {
			t.Fatalf("CONNECT %s: %v", target, err)
		}
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	cases := []struct{ target, reason string }{
		{"127.0.0.1:" + fport, "port_not_allowed"},
		{"localhost:" + fport, "host_not_allowed"},
		{"api.allowed.test:22", "port_not_allowed"},
		{"allowed.test:443", "host_not_allowed"}, // a wildcard never matches its apex
		{"evil.example:443", "host_not_allowed"},
	}
	for _, tc := range cases {
		code, body := connect(tc.target)
		if code != http.StatusForbidden || !strings.Contains(body, tc.reason) {
			t.Fatalf("CONNECT %s: %d %q, want 403 %s", tc.target, code, body, tc.reason)
		}
	}
	code, _ := connect("127.0.0.1:" + fport) // a repeat: refused again, not reported again
	if code != http.StatusForbidden {
		t.Fatalf("repeat: %d", code)
	}
	e.server.RemovePolicy(e.conv)
	if code, body := connect("api.allowed.test:443"); code != http.StatusForbidden || !strings.Contains(body, "no_policy") {
		t.Fatalf("without a policy: %d %q", code, body)
	}
	waitFor(t, "all reports", func() bool { return len(e.denials.all()) == len(cases)+1 })
	for i, d := range e.denials.all()[:len(cases)] {
		if d.conv != e.conv || d.target != cases[i].target || !strings.HasPrefix(d.reason, cases[i].reason+": ") {
			t.Errorf("report %d: %+v, want target %s reason %s", i, d, cases[i].target, cases[i].reason)
		}
	}
	if got := e.dials.all(); len(got) != 0 {
		t.Fatalf("the supervisor dialed %v for refused targets", got)
	}
	st := e.server.Stats()
	if st.Refused[egresswire.ReasonPortNotAllowed] != 3 || st.Refused[egresswire.ReasonHostNotAllowed] != 3 ||
		st.Refused[egresswire.ReasonNoPolicy] != 1 || st.Admitted != 0 || st.Reported != uint64(len(cases)+1) {
		t.Fatalf("stats %+v", st)
	}
	select {
	case <-accepted:
		t.Fatal("the forbidden listener received a connection")
	default:
	}
}

// TestGarbageHeaders opens raw streams as a misbehaving guest would: each is answered with a malformed_header
// refusal (or closed, for a header that never completes) and the session keeps serving good streams.
func TestGarbageHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	t.Cleanup(srv.Close)
	e := newEnv(t, egress.Options{HeaderTimeout: 300 * time.Millisecond})
	e.policy(t, "", strings.TrimPrefix(srv.URL, "http://"))
	cases := map[string][]byte{
		"http instead of a frame": []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"oversize length":         {0xff, 0xff, '{'},
		"unknown field":           frame(`{"kind":"proxy","target":"a:1","admin":true}`),
		"unknown kind":            frame(`{"kind":"socks","target":"a:1"}`),
		"provider with target":    frame(`{"kind":"provider","target":"a:1"}`),
		"target without port":     frame(`{"kind":"proxy","target":"a"}`),
		"port out of range":       frame(`{"kind":"proxy","target":"a:70000"}`),
		"bad host characters":     frame(`{"kind":"proxy","target":"a b/c:443"}`),
		"not json":                frame(`]]]]`),
	}
	for name, data := range cases {
		rep, err := rawStream(t, e, data)
		if err != nil || rep.OK || rep.Reason != egresswire.ReasonMalformedHeader {
			t.Errorf("%s: reply %+v err %v", name, rep, err)
		}
	}
	// A header that never completes is refused once HeaderTimeout passes.
	start := time.Now()
	rep, err := rawStream(t, e, []byte{0, 50, '{'})
	if d := time.Since(start); err != nil || rep.Reason != egresswire.ReasonMalformedHeader || d < 250*time.Millisecond || d > 5*time.Second {
		t.Errorf("truncated header: reply %+v err %v after %v", rep, err, d)
	}
	// The guest's proxy port refuses a malformed client request with 400.
	c, err := net.Dial("tcp", e.proxy.ProxyAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(c, "\x16\x03\x01 not http\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	_ = c.Close()
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("malformed client request: %v %v", resp, err)
	}
	// The session is unharmed.
	r2, err := proxiedClient(t, e, nil).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = r2.Body.Close()
	if r2.StatusCode != http.StatusOK {
		t.Fatalf("after garbage: %d", r2.StatusCode)
	}
}

// frame wraps a JSON body in the egress frame encoding.
func frame(body string) []byte { return append([]byte{byte(len(body) >> 8), byte(len(body))}, body...) }

// rawStream opens a stream from the guest, writes data and reads one reply frame.
func rawStream(t *testing.T, e *env, data []byte) (egresswire.Reply, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := e.out.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	_ = st.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := st.Write(data); err != nil {
		return egresswire.Reply{}, err
	}
	var rep egresswire.Reply
	err = egresswire.ReadFrame(st, &rep)
	return rep, err
}

// rebinder answers every name with the addresses it maps it to.
type rebinder map[string][]string

func (r rebinder) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	var out []net.IPAddr
	for _, a := range r[host] {
		out = append(out, net.IPAddr{IP: net.ParseIP(a)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no such host %s", host)
	}
	return out, nil
}

// TestAllowedDomainDoesNotLeadIntoTheHost: a domain on the allow-list whose DNS
// answers with loopback or link-local addresses (a rebinding toward the
// supervisor host or a cloud metadata service) is refused with host_internal
// and never dialled; one with a usable address is dialled at that address.
// Before, the supervisor dialled whatever the name resolved to.
func TestAllowedDomainDoesNotLeadIntoTheHost(t *testing.T) {
	e := newEnv(t, egress.Options{Resolver: rebinder{
		"rebind.example":   {"127.0.0.1"},
		"metadata.example": {"169.254.169.254", "::1"},
		"mixed.example":    {"127.0.0.1", "192.0.2.7"},
	}})
	e.dials.offline = true // 192.0.2.7 is not ours to reach: record the dial only
	e.policy(t, "", "rebind.example:443", "metadata.example:80", "mixed.example:443")
	connect := func(target string) int {
		c, err := net.Dial("tcp", e.proxy.ProxyAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		_, _ = fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", target)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		if err != nil {
			t.Fatalf("CONNECT %s: %v", target, err)
		}
		return resp.StatusCode
	}
	for _, target := range []string{"rebind.example:443", "metadata.example:80"} {
		if code := connect(target); code == http.StatusOK {
			t.Errorf("%s: tunnel opened", target)
		}
	}
	for _, d := range e.dials.all() {
		if !strings.HasPrefix(d, "192.0.2.7") {
			t.Errorf("dialled %s", d)
		}
	}
	found := 0
	for _, d := range e.denials.all() {
		if strings.HasPrefix(d.reason, string(egresswire.ReasonHostInternal)) {
			found++
		}
	}
	if found != 2 {
		t.Fatalf("denials %v, want two host_internal", e.denials.all())
	}
	connect("mixed.example:443") // the offline dialer fails; what it was asked to dial is what counts
	if got := e.dials.all(); len(got) != 1 || got[0] != "192.0.2.7:443" {
		t.Fatalf("dialled %v, want the non-internal address", got)
	}
}
