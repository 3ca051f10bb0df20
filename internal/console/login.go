package console

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"aicli.dev/aicli/internal/console/auth"
)

type loginData struct{ Token, Next, Error string }

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.writeLogin(w, r, http.StatusOK, "")
}

func (s *Server) writeLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d := loginData{Token: s.Auth.LoginToken(w, r), Next: safeNext(r.FormValue("next")), Error: msg}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := s.templates[""].ExecuteTemplate(w, "login", d); err != nil {
		s.log().Error("console: rendering the login page", "err", err)
	}
}

// login checks the password. A client that failed too often, or a console
// over its rate of password checks, gets 429 with Retry-After and the wait
// on the page, and its password is not checked (auth.Limiter).
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !s.Auth.CheckLoginToken(r) {
		s.writeLogin(w, r, http.StatusForbidden, "The login form expired: try again.")
		return
	}
	sess, err := s.Auth.Login(s.Auth.ClientAddr(r), r.PostFormValue("password"))
	var throttled *auth.ThrottledError
	switch {
	case errors.As(err, &throttled):
		w.Header().Set("Retry-After", strconv.Itoa(throttled.Seconds()))
		msg := "Too many failed logins from your address"
		if throttled.Global {
			msg = "Too many login attempts on this console"
		}
		s.writeLogin(w, r, http.StatusTooManyRequests, fmt.Sprintf("%s: try again in %s.", msg, waitText(throttled.Seconds())))
		return
	case err != nil:
		s.writeLogin(w, r, http.StatusUnauthorized, "Wrong password.")
		return
	}
	s.Auth.SetCookie(w, r, sess)
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// waitText says a wait of secs seconds for a person ("1 second", "30 seconds",
// "2 minutes"), rounded up to whole minutes past two minutes.
func waitText(secs int) string {
	switch {
	case secs == 1:
		return "1 second"
	case secs <= 120:
		return strconv.Itoa(secs) + " seconds"
	}
	return strconv.Itoa((secs+59)/60) + " minutes"
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if sess := auth.FromContext(r.Context()); sess != nil {
		s.Auth.Logout(sess)
	}
	s.Auth.ClearCookie(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a post-login redirect on this site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}
