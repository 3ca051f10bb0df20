package console

import (
	"net/http"
	"strings"
	"time"

	"aicli.dev/aicli/internal/console/auth"
)

type loginData struct{ Token, Next, Error string }

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.writeLogin(w, r, http.StatusOK, "")
}

func (s *Server) writeLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d := loginData{Token: auth.LoginToken(w, r), Next: safeNext(r.FormValue("next")), Error: msg}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := s.templates[""].ExecuteTemplate(w, "login", d); err != nil {
		s.log().Error("console: rendering the login page", "err", err)
	}
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !auth.CheckLoginToken(r) {
		s.writeLogin(w, r, http.StatusForbidden, "The login form expired: try again.")
		return
	}
	sess, err := s.Auth.Login(r.PostFormValue("password"))
	if err != nil {
		time.Sleep(300 * time.Millisecond) // slows guessing
		s.writeLogin(w, r, http.StatusUnauthorized, "Wrong password.")
		return
	}
	auth.SetCookie(w, r, sess)
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if sess := auth.FromContext(r.Context()); sess != nil {
		s.Auth.Logout(sess)
	}
	auth.ClearCookie(w)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a post-login redirect on this site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}
