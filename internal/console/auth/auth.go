// Package auth guards the console: one console password (stored as a bcrypt
// hash in the state file, set at first start) whose guessing a Limiter slows,
// in-memory login sessions behind an HttpOnly SameSite=Strict cookie (Secure
// over https, also behind a trusted TLS-terminating proxy), and a per-session
// CSRF token from the console's own origin on every state-changing request.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
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
	// Limiter slows password guessing (nil: a Limiter with its defaults).
	Limiter *Limiter
	// Proxies are the reverse proxies whose X-Forwarded-For, -Proto and
	// -Host are believed (none by default).
	Proxies Proxies
	// Cookies decides the cookies' Secure attribute (default auto).
	Cookies CookieMode
	// Logger receives failed and refused logins (default slog.Default()).
	Logger *slog.Logger
	// Compare checks a password against the stored hash (default
	// bcrypt.CompareHashAndPassword): a seam for tests.
	Compare func(hash, password []byte) error

	limiterOnce sync.Once
	mu          sync.Mutex
	sessions    map[string]*Session
	refused     int       // throttled attempts since refusedLog
	refusedLog  time.Time // when refused attempts were last logged
}

// refusedLogEvery spaces the log lines about throttled attempts, which an
// attacker can send as fast as he likes.
const refusedLogEvery = time.Minute

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

func (a *Auth) log() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

func (a *Auth) limiter() *Limiter {
	a.limiterOnce.Do(func() {
		if a.Limiter == nil {
			a.Limiter = &Limiter{}
		}
	})
	return a.Limiter
}

// Login checks password, tried from client, and opens a session. While the
// client is locked out, or all clients together are over the rate, it
// refuses with a *ThrottledError without checking the password. A wrong
// password is ErrBadPassword and is logged (with the client, never the
// password).
func (a *Auth) Login(client netip.Addr, password string) (*Session, error) {
	lim := a.limiter()
	failures, locked, err := lim.begin(client, a.now())
	if err != nil {
		a.logRefused(client, err)
		return nil, err
	}
	hash := a.State.Get().PasswordHash
	compare := a.Compare
	if compare == nil {
		compare = bcrypt.CompareHashAndPassword
	}
	if hash == "" || compare([]byte(hash), []byte(password)) != nil {
		a.log().Warn("console: failed login", "client", client.String(), "failures", failures, "lockedOutFor", locked.String())
		return nil, ErrBadPassword
	}
	lim.succeeded(client)
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

// logRefused logs throttled attempts, at most one line a minute.
func (a *Auth) logRefused(client netip.Addr, err error) {
	now := a.now()
	a.mu.Lock()
	a.refused++
	if now.Sub(a.refusedLog) < refusedLogEvery {
		a.mu.Unlock()
		return
	}
	n := a.refused
	a.refused, a.refusedLog = 0, now
	a.mu.Unlock()
	a.log().Warn("console: login attempts refused without a password check", "refused", n, "lastClient", client.String(), "reason", err.Error())
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

// ClientAddr is the address of the request's client (see Proxies.ClientAddr).
func (a *Auth) ClientAddr(r *http.Request) netip.Addr { return a.Proxies.ClientAddr(r) }

// Secure reports whether cookies set in reply to r are marked Secure: per
// Cookies, and in auto mode when the browser reached the console over https
// (TLS, or a trusted proxy's X-Forwarded-Proto).
func (a *Auth) Secure(r *http.Request) bool {
	switch a.Cookies {
	case CookiesAlways:
		return true
	case CookiesNever:
		return false
	}
	return a.Proxies.HTTPS(r)
}

// SetCookie sets the session cookie on w.
func (a *Auth) SetCookie(w http.ResponseWriter, r *http.Request, s *Session) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: s.ID, Path: "/", HttpOnly: true,
		Secure: a.Secure(r), SameSite: http.SameSiteStrictMode, MaxAge: int(SessionTTL / time.Second)})
}

// ClearCookie removes the session cookie.
func (a *Auth) ClearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", HttpOnly: true, MaxAge: -1,
		Secure: a.Secure(r), SameSite: http.SameSiteStrictMode})
}

// LoginToken returns the pre-login CSRF token of the browser (set as a
// cookie when missing): the login form must echo it.
func (a *Auth) LoginToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(loginCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	t := Token(32)
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: t, Path: "/login", HttpOnly: true,
		Secure: a.Secure(r), SameSite: http.SameSiteStrictMode})
	return t
}

// CheckLoginToken reports whether the login form echoes the browser's
// pre-login token, from the console's own origin.
func (a *Auth) CheckLoginToken(r *http.Request) bool {
	c, err := r.Cookie(loginCookie)
	return err == nil && a.SameOrigin(r) && equal(c.Value, r.PostFormValue(CSRFField))
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
			if !a.SameOrigin(r) || !equal(token, s.CSRF) {
				http.Error(w, "refused: missing or wrong CSRF token (reload the page and try again)", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, s)))
	})
}

// SameOrigin reports whether the request's Origin, when it sends one, is the
// console as the browser sees it: the host is the request's Host (or a
// trusted proxy's X-Forwarded-Host), and when the browser reached the console
// over https (TLS, or a trusted proxy's X-Forwarded-Proto) the scheme is
// https. Without a trusted proxy the scheme is not known and not compared.
func (a *Auth) SameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, a.Proxies.Host(r)) {
		return false
	}
	return u.Scheme == "https" || !a.Proxies.HTTPS(r)
}

func equal(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
