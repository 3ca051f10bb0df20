// Package auth guards the console: one console password (stored as a bcrypt
// hash in the state file, set at first start), in-memory login sessions
// behind an HttpOnly SameSite=Strict cookie, and a per-session CSRF token
// required on every state-changing request.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"aicli.dev/aicli/internal/console/state"
)

// Cookie names, the CSRF header and form field.
const (
	SessionCookie = "aicli_console_session"
	loginCookie   = "aicli_console_login"
	CSRFHeader    = "X-CSRF-Token"
	CSRFField     = "_csrf"
)

// SessionTTL is how long a login lasts without use.
const SessionTTL = 12 * time.Hour

// MinPasswordLength is the shortest console password accepted.
const MinPasswordLength = 12

// Session is one logged-in browser.
type Session struct {
	ID   string
	CSRF string
	seen time.Time
}

// Auth checks the console password and keeps the sessions.
type Auth struct {
	State *state.File
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu       sync.Mutex
	sessions map[string]*Session
}

// EnsurePassword makes sure a console password is set. With none stored, it
// uses password when given (and long enough), otherwise it generates one;
// either way it stores only its hash. It returns the generated password (to be
// shown once), or "" when none was generated.
func (a *Auth) EnsurePassword(password string) (generated string, err error) {
	if a.State.Get().PasswordHash != "" && password == "" {
		return "", nil
	}
	if password == "" {
		generated = Token(18)
		password = generated
	} else if len(password) < MinPasswordLength {
		return "", fmt.Errorf("the console password must have at least %d characters", MinPasswordLength)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", err
	}
	if err := a.State.Update(func(d *state.Data) { d.PasswordHash = string(hash) }); err != nil {
		return "", err
	}
	return generated, nil
}

// Token returns n random bytes, base64url-encoded.
func Token(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (a *Auth) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// ErrBadPassword is a failed login.
var ErrBadPassword = errors.New("wrong password")

// Login checks password and opens a session.
func (a *Auth) Login(password string) (*Session, error) {
	hash := a.State.Get().PasswordHash
	if hash == "" || bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) != nil {
		return nil, ErrBadPassword
	}
	s := &Session{ID: Token(32), CSRF: Token(32), seen: a.now()}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sessions == nil {
		a.sessions = map[string]*Session{}
	}
	for id, old := range a.sessions {
		if a.now().Sub(old.seen) > SessionTTL {
			delete(a.sessions, id)
		}
	}
	a.sessions[s.ID] = s
	return s, nil
}

// Logout ends the session.
func (a *Auth) Logout(s *Session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.sessions, s.ID)
}

// Session returns the request's live session, or nil.
func (a *Auth) Session(r *http.Request) *Session {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[c.Value]
	if s == nil || a.now().Sub(s.seen) > SessionTTL {
		return nil
	}
	s.seen = a.now()
	return s
}

// SetCookie sets the session cookie on w.
func SetCookie(w http.ResponseWriter, r *http.Request, s *Session) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: s.ID, Path: "/", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode, MaxAge: int(SessionTTL / time.Second)})
}

// ClearCookie removes the session cookie.
func ClearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", HttpOnly: true, MaxAge: -1,
		SameSite: http.SameSiteStrictMode})
}

// LoginToken returns the pre-login CSRF token of the browser (set as a
// cookie when missing): the login form must echo it.
func LoginToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(loginCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	t := Token(32)
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: t, Path: "/login", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	return t
}

// CheckLoginToken reports whether the login form echoes the browser's pre-login token.
func CheckLoginToken(r *http.Request) bool {
	c, err := r.Cookie(loginCookie)
	return err == nil && sameOrigin(r) && equal(c.Value, r.PostFormValue(CSRFField))
}

type ctxKey struct{}

// FromContext returns the session Require put in the request's context.
func FromContext(ctx context.Context) *Session {
	s, _ := ctx.Value(ctxKey{}).(*Session)
	return s
}

// Require lets only logged-in browsers through, and for a state-changing
// method (anything but GET, HEAD, OPTIONS) only with the session's CSRF token
// (header X-CSRF-Token or form field _csrf) from the console's own origin.
// A page request without a session is sent to the login page; anything else
// gets 401.
func (a *Auth) Require(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := a.Session(r)
		if s == nil {
			if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/ws/") && r.Header.Get("HX-Request") == "" {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(w, "not logged in to the console: log in again", http.StatusUnauthorized)
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			token := r.Header.Get(CSRFHeader)
			if token == "" {
				token = r.PostFormValue(CSRFField)
			}
			if !sameOrigin(r) || !equal(token, s.CSRF) {
				http.Error(w, "refused: missing or wrong CSRF token (reload the page and try again)", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, s)))
	})
}

// sameOrigin rejects a request whose Origin (when sent) is not this host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

func equal(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
