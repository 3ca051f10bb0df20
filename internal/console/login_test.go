package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/console/auth"
	"aicli.dev/aicli/internal/console/fleet"
	"aicli.dev/aicli/internal/console/state"
)

// loginConsole is a console whose Auth is a (its State is set here, and its
// password is testPassword), over one supervisor nobody serves: the login
// needs none.
func loginConsole(t *testing.T, a *auth.Auth) http.Handler {
	t.Helper()
	st, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.New([]state.Supervisor{{Name: "a", Server: "unix://" + filepath.Join(t.TempDir(), "none.sock")}})
	if err != nil {
		t.Fatal(err)
	}
	a.State = st
	if _, err := a.EnsurePassword(testPassword); err != nil {
		t.Fatal(err)
	}
	h, err := (&Server{Fleet: f, Auth: a, State: st}).Handler()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

var formToken = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// postLogin opens the login page and submits password, both from peer with
// the headers hdr (name, value, …), as a browser at http://console.test.
func postLogin(t *testing.T, h http.Handler, peer, password string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := func(method string, body string) *http.Request {
		r := httptest.NewRequest(method, "http://console.test/login", strings.NewReader(body))
		r.RemoteAddr = peer
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Add(hdr[i], hdr[i+1])
		}
		return r
	}
	page := httptest.NewRecorder()
	h.ServeHTTP(page, req(http.MethodGet, ""))
	tok := formToken.FindStringSubmatch(page.Body.String())
	if tok == nil {
		t.Fatalf("login page without a form token: %s", page.Body)
	}
	r := req(http.MethodPost, url.Values{"_csrf": {tok[1]}, "password": {password}, "next": {"/manage"}}.Encode())
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range page.Result().Cookies() {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// sessionCookie is the session cookie w sets, or nil.
func sessionCookie(w *httptest.ResponseRecorder) *http.Cookie {
	for _, c := range w.Result().Cookies() {
		if c.Name == auth.SessionCookie {
			return c
		}
	}
	return nil
}

func TestLoginPageRefusesAGuesserWith429AndRetryAfter(t *testing.T) {
	h := loginConsole(t, &auth.Auth{})
	const guesser = "192.0.2.50:40000"
	for i := range 5 {
		if w := postLogin(t, h, guesser, "guess"); w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "Wrong password.") {
			t.Fatalf("wrong password %d: %d %s", i+1, w.Code, w.Body)
		}
	}
	w := postLogin(t, h, guesser, testPassword)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "30" || sessionCookie(w) != nil {
		t.Fatalf("after 5 wrong passwords: %d, Retry-After %q, session %v, want 429 with Retry-After 30 and no session",
			w.Code, w.Header().Get("Retry-After"), sessionCookie(w))
	}
	if body := w.Body.String(); !strings.Contains(body, "Too many failed logins from your address: try again in 30 seconds.") ||
		!strings.Contains(body, `<form method="post" action="/login"`) {
		t.Fatalf("the locked-out login page does not say why: %s", body)
	}
	// Another browser logs in.
	if w := postLogin(t, h, "198.51.100.3:40000", testPassword); w.Code != http.StatusSeeOther || sessionCookie(w) == nil {
		t.Fatalf("another client: %d %s", w.Code, w.Body)
	}
}
