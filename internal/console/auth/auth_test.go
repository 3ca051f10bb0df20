package auth_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/console/auth"
	"aicli.dev/aicli/internal/console/state"
)

// testClient is the address the tests log in from.
var testClient = netip.MustParseAddr("192.0.2.10")

func newAuth(t *testing.T) (*auth.Auth, *state.File) {
	t.Helper()
	st, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &auth.Auth{State: st, Logger: slog.New(slog.DiscardHandler)}, st
}

func TestFirstStartGeneratesAPasswordStoredHashed(t *testing.T) {
	a, st := newAuth(t)
	pw, err := a.EnsurePassword("")
	if err != nil || len(pw) < auth.MinPasswordLength {
		t.Fatalf("generated %q, %v", pw, err)
	}
	if h := st.Get().PasswordHash; !strings.HasPrefix(h, "$2") || strings.Contains(h, pw) {
		t.Fatalf("stored %q", h)
	}
	if again, _ := a.EnsurePassword(""); again != "" {
		t.Fatal("a second start generated another password")
	}
	if _, err := a.Login(testClient, "wrong"); err == nil {
		t.Fatal("a wrong password logged in")
	}
	if _, err := a.Login(testClient, pw); err != nil {
		t.Fatal(err)
	}
	if _, err := a.EnsurePassword("short"); err == nil {
		t.Fatal("a short password was accepted")
	}
}

func TestRequireNeedsSessionAndCSRF(t *testing.T) {
	a, _ := newAuth(t)
	if _, err := a.EnsurePassword("a-long-enough-password"); err != nil {
		t.Fatal(err)
	}
	s, err := a.Login(testClient, "a-long-enough-password")
	if err != nil {
		t.Fatal(err)
	}
	h := a.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth.FromContext(r.Context()) == nil {
			t.Error("no session in the context")
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	do := func(method, target string, session bool, hdr map[string]string, form url.Values) int {
		var body *strings.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		} else {
			body = strings.NewReader("")
		}
		r := httptest.NewRequest(method, target, body)
		r.Host = "console.test"
		if form != nil {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		if session {
			r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: s.ID})
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for _, c := range []struct {
		name    string
		method  string
		session bool
		hdr     map[string]string
		form    url.Values
		want    int
	}{
		{"anonymous page", "GET", false, nil, nil, http.StatusSeeOther},
		{"anonymous htmx", "GET", false, map[string]string{"HX-Request": "true"}, nil, http.StatusUnauthorized},
		{"page", "GET", true, nil, nil, http.StatusNoContent},
		{"post without token", "POST", true, nil, url.Values{}, http.StatusForbidden},
		{"post with wrong token", "POST", true, map[string]string{auth.CSRFHeader: "x"}, nil, http.StatusForbidden},
		{"post with header token", "POST", true, map[string]string{auth.CSRFHeader: s.CSRF}, nil, http.StatusNoContent},
		{"post with form token", "POST", true, nil, url.Values{auth.CSRFField: {s.CSRF}}, http.StatusNoContent},
		{"cross-origin post", "POST", true, map[string]string{auth.CSRFHeader: s.CSRF, "Origin": "https://evil.test"}, nil, http.StatusForbidden},
		{"same-origin post", "POST", true, map[string]string{auth.CSRFHeader: s.CSRF, "Origin": "http://console.test"}, nil, http.StatusNoContent},
	} {
		if got := do(c.method, "/manage", c.session, c.hdr, c.form); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	a.Logout(s)
	if got := do("GET", "/manage", true, nil, nil); got != http.StatusSeeOther {
		t.Errorf("after logout: %d", got)
	}
}
