package auth_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/console/auth"
)

// proxies trusts 10.0.0.0/8 and fd00::1.
func proxies(t *testing.T) auth.Proxies {
	t.Helper()
	p, err := auth.ParseProxies([]string{"10.0.0.0/8", "fd00::1"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// request is a GET from peer with the headers hdr (name, value, …).
func request(peer string, hdr ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/login", nil)
	r.RemoteAddr = peer
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	return r
}

func TestParseProxiesAndCookieModes(t *testing.T) {
	p := proxies(t)
	for addr, want := range map[string]bool{"10.1.2.3": true, "::ffff:10.1.2.3": true, "fd00::1": true, "fd00::2": false, "192.0.2.1": false} {
		if got := p.Trusts(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Trusts(%s) = %v", addr, got)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "10.0.0"} {
		if _, err := auth.ParseProxies([]string{bad}); err == nil {
			t.Errorf("ParseProxies(%q) accepted", bad)
		}
	}
	for in, want := range map[string]auth.CookieMode{"": auth.CookiesAuto, "auto": auth.CookiesAuto, "Always": auth.CookiesAlways, "never": auth.CookiesNever} {
		if got, err := auth.ParseCookieMode(in); err != nil || got != want {
			t.Errorf("ParseCookieMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := auth.ParseCookieMode("sometimes"); err == nil {
		t.Error("ParseCookieMode accepted sometimes")
	}
}

func TestClientAddrBelievesForwardedForOnlyFromTrustedProxies(t *testing.T) {
	p := proxies(t)
	for _, c := range []struct {
		name string
		r    *http.Request
		want string
	}{
		{"direct", request("198.51.100.1:5000"), "198.51.100.1"},
		{"untrusted peer's header", request("203.0.113.9:5000", "X-Forwarded-For", "198.51.100.1"), "203.0.113.9"},
		{"trusted proxy", request("10.0.0.2:5000", "X-Forwarded-For", "198.51.100.1"), "198.51.100.1"},
		{"made-up hops left of the client", request("10.0.0.2:5000", "X-Forwarded-For", "6.6.6.6, 198.51.100.1"), "198.51.100.1"},
		{"a chain of trusted proxies", request("10.0.0.2:5000", "X-Forwarded-For", "6.6.6.6, 198.51.100.1, 10.9.9.9"), "198.51.100.1"},
		{"several header lines", request("10.0.0.2:5000", "X-Forwarded-For", "6.6.6.6", "X-Forwarded-For", "198.51.100.1"), "198.51.100.1"},
		{"trusted proxy without the header", request("10.0.0.2:5000"), "10.0.0.2"},
		{"unparsable hop", request("10.0.0.2:5000", "X-Forwarded-For", "198.51.100.1, unknown"), "10.0.0.2"},
		{"hop with a port", request("10.0.0.2:5000", "X-Forwarded-For", "[2001:db8::7]:443"), "2001:db8::7"},
		{"IPv6 proxy", request("[fd00::1]:5000", "X-Forwarded-For", "198.51.100.1"), "198.51.100.1"},
		{"IPv4-mapped peer", request("[::ffff:10.0.0.2]:5000", "X-Forwarded-For", "198.51.100.1"), "198.51.100.1"},
	} {
		if got := p.ClientAddr(c.r); got.String() != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestCookiesAreSecureOverHTTPSAlsoBehindATrustedProxy checks the session
// cookie and the login form's cookie.
func TestCookiesAreSecureOverHTTPSAlsoBehindATrustedProxy(t *testing.T) {
	a, _ := newAuth(t)
	a.Proxies = proxies(t)
	withTLS := func(r *http.Request) *http.Request { r.TLS = &tls.ConnectionState{}; return r }
	for _, c := range []struct {
		name string
		mode auth.CookieMode
		r    *http.Request
		want bool
	}{
		{"plain http", "", request("198.51.100.1:5000"), false},
		{"TLS", "", withTLS(request("198.51.100.1:5000")), true},
		{"trusted proxy says https", "", request("10.0.0.2:5000", "X-Forwarded-Proto", "https"), true},
		{"trusted proxy chain, first said https", "", request("10.0.0.2:5000", "X-Forwarded-Proto", "https, http"), true},
		{"trusted proxy says http", "", request("10.0.0.2:5000", "X-Forwarded-Proto", "http"), false},
		{"untrusted peer says https", "", request("203.0.113.9:5000", "X-Forwarded-Proto", "https"), false},
		{"always, plain http", auth.CookiesAlways, request("198.51.100.1:5000"), true},
		{"never, TLS", auth.CookiesNever, withTLS(request("198.51.100.1:5000")), false},
	} {
		a.Cookies = c.mode
		w := httptest.NewRecorder()
		a.LoginToken(w, c.r)
		a.SetCookie(w, c.r, &auth.Session{ID: "s"})
		cookies := w.Result().Cookies()
		if len(cookies) != 2 {
			t.Fatalf("%s: cookies %v", c.name, cookies)
		}
		for _, ck := range cookies {
			if ck.Secure != c.want || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
				t.Errorf("%s: cookie %s: Secure=%v HttpOnly=%v SameSite=%v, want Secure=%v", c.name, ck.Name, ck.Secure, ck.HttpOnly, ck.SameSite, c.want)
			}
		}
	}
}

// TestStateChangingRequestsStaySameOriginBehindAProxy: a proxy that keeps
// the Host, or one that rewrites it and sends X-Forwarded-Host.
func TestStateChangingRequestsStaySameOriginBehindAProxy(t *testing.T) {
	a, _ := newAuth(t)
	a.Proxies = proxies(t)
	if _, err := a.EnsurePassword("a-long-enough-password"); err != nil {
		t.Fatal(err)
	}
	s, err := a.Login(testClient, "a-long-enough-password")
	if err != nil {
		t.Fatal(err)
	}
	h := a.Require(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	post := func(peer, host string, hdr ...string) int {
		r := httptest.NewRequest(http.MethodPost, "/logout", strings.NewReader(""))
		r.RemoteAddr, r.Host = peer, host
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Add(hdr[i], hdr[i+1])
		}
		r.Header.Set(auth.CSRFHeader, s.CSRF)
		r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: s.ID})
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	const ok, refused = http.StatusNoContent, http.StatusForbidden
	for _, c := range []struct {
		name string
		code int
		got  int
	}{
		{"direct, same host", ok, post("198.51.100.1:5000", "console.example", "Origin", "http://console.example")},
		{"direct, another host", refused, post("198.51.100.1:5000", "console.example", "Origin", "http://evil.example")},
		{"proxy keeping the Host", ok, post("10.0.0.2:5000", "console.example", "Origin", "https://console.example", "X-Forwarded-Proto", "https")},
		{"proxy rewriting the Host", ok, post("10.0.0.2:5000", "127.0.0.1:8080", "Origin", "https://console.example",
			"X-Forwarded-Host", "console.example", "X-Forwarded-Proto", "https")},
		{"proxy rewriting the Host, another origin", refused, post("10.0.0.2:5000", "127.0.0.1:8080", "Origin", "https://evil.example",
			"X-Forwarded-Host", "console.example", "X-Forwarded-Proto", "https")},
		{"https console, http origin", refused, post("10.0.0.2:5000", "console.example", "Origin", "http://console.example", "X-Forwarded-Proto", "https")},
		{"untrusted peer's X-Forwarded-Host", refused, post("203.0.113.9:5000", "console.example", "Origin", "https://evil.example",
			"X-Forwarded-Host", "evil.example")},
		{"Origin null", refused, post("198.51.100.1:5000", "console.example", "Origin", "null")},
	} {
		if c.got != c.code {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.code)
		}
	}
}
