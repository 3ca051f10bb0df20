package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/crypto/bcrypt"

	"aicli.dev/aicli/internal/console/auth"
)

// proxiedAuth is an Auth behind a TLS-terminating proxy at 10.0.0.2, with a
// fake clock (advance) and a password check that counts its calls.
func proxiedAuth(t *testing.T) (a *auth.Auth, advance func(time.Duration), checks *atomic.Int64) {
	t.Helper()
	proxies, err := auth.ParseProxies([]string{"10.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	checks = &atomic.Int64{}
	a = &auth.Auth{Proxies: proxies,
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		Compare: func(hash, password []byte) error {
			checks.Add(1)
			return bcrypt.CompareHashAndPassword(hash, password)
		}}
	return a, func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }, checks
}

func TestLoginBehindATrustedProxyLimitsEachClientAndMarksTheCookieSecure(t *testing.T) {
	a, advance, checks := proxiedAuth(t)
	h := loginConsole(t, a)
	const proxy = "10.0.0.2:50000"
	viaProxy := func(client string) []string {
		return []string{"X-Forwarded-For", client, "X-Forwarded-Proto", "https"}
	}
	// A client behind the proxy fails five times and is locked out; its
	// passwords are no longer checked.
	for range 5 {
		if w := postLogin(t, h, proxy, "guess", viaProxy("198.51.100.1")...); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong password via the proxy: %d", w.Code)
		}
	}
	if w := postLogin(t, h, proxy, testPassword, viaProxy("198.51.100.1")...); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "30" {
		t.Fatalf("locked-out client via the proxy: %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	if n := checks.Load(); n != 5 {
		t.Fatalf("%d password checks, want 5 (none while locked out)", n)
	}
	// Another client behind the same proxy is not locked out, and its
	// session cookie is Secure: the browser used https.
	w := postLogin(t, h, proxy, testPassword, viaProxy("198.51.100.2")...)
	if c := sessionCookie(w); w.Code != http.StatusSeeOther || c == nil || !c.Secure {
		t.Fatalf("another client via the proxy: %d, session cookie %v, want a Secure one", w.Code, c)
	}
	// Someone else saying X-Forwarded-*: not believed, neither to pick a new
	// address per guess nor to get a Secure cookie over plain http.
	const direct = "203.0.113.7:50000"
	for i := range 5 {
		postLogin(t, h, direct, "guess", viaProxy(fmt.Sprintf("192.0.2.%d", i))...)
	}
	if w := postLogin(t, h, direct, testPassword, viaProxy("192.0.2.99")...); w.Code != http.StatusTooManyRequests {
		t.Fatalf("a direct client rotating X-Forwarded-For: %d, want 429", w.Code)
	}
	advance(time.Second) // ten guesses emptied the console's bucket: 5 more a second
	w = postLogin(t, h, "203.0.113.8:50000", testPassword, "X-Forwarded-Proto", "https")
	if c := sessionCookie(w); w.Code != http.StatusSeeOther || c == nil || c.Secure {
		t.Fatalf("a direct plain-http login saying X-Forwarded-Proto: %d, session cookie %v, want one without Secure", w.Code, c)
	}
	// When the lockout ends, the right password works.
	advance(30 * time.Second)
	if w := postLogin(t, h, proxy, testPassword, viaProxy("198.51.100.1")...); w.Code != http.StatusSeeOther || sessionCookie(w) == nil {
		t.Fatalf("after the lockout: %d %s", w.Code, w.Body)
	}
}

// TestLiveViewsAcceptTheConsolesOriginBehindAProxy: a proxy that rewrites
// the Host and sends X-Forwarded-Host; the page's origin is that host.
func TestLiveViewsAcceptTheConsolesOriginBehindAProxy(t *testing.T) {
	a := &auth.Auth{Proxies: auth.Proxies{}}
	proxies, err := auth.ParseProxies([]string{"127.0.0.0/8", "::1"}) // the test's client plays the proxy
	if err != nil {
		t.Fatal(err)
	}
	a.Proxies = proxies
	hs := httptest.NewServer(loginConsole(t, a))
	t.Cleanup(hs.Close)
	sess, err := a.Login(a.Proxies[0].Addr(), testPassword)
	if err != nil {
		t.Fatal(err)
	}
	dial := func(origin string) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		hdr := http.Header{"Origin": {origin}, "X-Forwarded-Host": {"console.example"}, "X-Forwarded-Proto": {"https"},
			"Cookie": {auth.SessionCookie + "=" + sess.ID}}
		c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/ws/health", &websocket.DialOptions{HTTPHeader: hdr})
		if err != nil {
			if resp == nil {
				return 0, err
			}
			return resp.StatusCode, err
		}
		defer c.CloseNow()
		if _, msg, err := c.Read(ctx); err != nil || !strings.Contains(string(msg), "RESYNC") {
			return 0, fmt.Errorf("first message %q, %v", msg, err)
		}
		return http.StatusSwitchingProtocols, nil
	}
	if code, err := dial("https://console.example"); code != http.StatusSwitchingProtocols {
		t.Fatalf("the console's own origin behind the proxy: %d, %v", code, err)
	}
	for _, origin := range []string{"https://evil.example", "http://console.example"} {
		if code, _ := dial(origin); code != http.StatusForbidden {
			t.Errorf("origin %s: %d, want 403", origin, code)
		}
	}
}
