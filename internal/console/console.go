// Package console is aicli-console: the fleet Manager (/manage) and the
// end-user console MyLittleAgi (/), web UIs over the supervisors' public API
// (internal/client). It holds no agent state: pages render what the
// supervisors return, live views relay their watch, transcript and attach
// streams, and commands go to the agent's home supervisor. Its only durable
// state is internal/console/state.
package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/internal/console/auth"
	"aicli.dev/aicli/internal/console/fleet"
	"aicli.dev/aicli/internal/console/state"
	"aicli.dev/aicli/internal/console/web"
)

// Server serves both consoles.
type Server struct {
	Fleet  *fleet.Fleet
	Auth   *auth.Auth
	State  *state.File
	Logger *slog.Logger
	// LaunchTimeout bounds a new agent's first launch before placement tries
	// another supervisor (default 3 minutes).
	LaunchTimeout time.Duration

	once      sync.Once
	templates map[string]*template.Template
	tmplErr   error
	mux       *http.ServeMux
	spend     spendCache // the fleet page's spend of today, per supervisor

	attachCache attachmentCache // monitor attachments for the banner and badges (alerts.go)
}

// Handler returns the console's HTTP handler.
func (s *Server) Handler() (http.Handler, error) {
	if err := s.loadTemplates(); err != nil {
		return nil, err
	}
	s.mux = http.NewServeMux()
	s.routes()
	return securityHeaders(s.mux), nil
}

func (s *Server) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// handle registers an authenticated route.
func (s *Server) handle(pattern string, h http.HandlerFunc) {
	s.mux.Handle(pattern, s.Auth.Require(h))
}

// securityHeaders forbids framing and inline script, and sniffing.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "+
			"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

var funcs = template.FuncMap{
	"join": strings.Join,
}

// loadTemplates parses layout.html with every page file: each page file
// defines "content" (and may define partials, rendered alone by name).
func (s *Server) loadTemplates() error {
	s.once.Do(func() {
		tfs := web.Templates()
		base, err := template.New("base").Funcs(funcs).ParseFS(tfs, "layout.html", "login.html")
		if err != nil {
			s.tmplErr = err
			return
		}
		pages, err := fs.Glob(tfs, "*.html")
		if err != nil {
			s.tmplErr = err
			return
		}
		s.templates = map[string]*template.Template{}
		for _, p := range pages {
			if p == "layout.html" || p == "login.html" {
				continue
			}
			t, err := template.Must(base.Clone()).ParseFS(tfs, p)
			if err != nil {
				s.tmplErr = fmt.Errorf("template %s: %w", p, err)
				return
			}
			s.templates[strings.TrimSuffix(path.Base(p), ".html")] = t
		}
		s.templates[""] = base
	})
	return s.tmplErr
}

// Page is what the layout renders around a page's content.
type Page struct {
	Title   string
	Section string // "manage" or "user"
	Nav     string // the highlighted navigation entry
	CSRF    string
	Bundle  bool
	Down    []DownSupervisor
	Alerts  []Alert
	Error   string
	Data    any
}

// DownSupervisor is a supervisor the last health check found down.
type DownSupervisor struct{ Name, Err string }

// page returns the Page of a request in section (manage or user).
func (s *Server) page(r *http.Request, section, nav, title string, data any) *Page {
	p := &Page{Title: title, Section: section, Nav: nav, Bundle: web.BundleBuilt(), Data: data}
	p.CSRF = csrfOf(r)
	for _, sup := range s.Fleet.Supervisors {
		if h := sup.Health(); !h.Up && !h.Checked.IsZero() {
			p.Down = append(p.Down, DownSupervisor{Name: sup.Name, Err: h.Err})
		}
	}
	if section == "manage" {
		p.Alerts = s.alerts(r.Context(), p.CSRF)
	}
	return p
}

// render writes page name (templates/<name>.html) in the layout.
func (s *Server) render(w http.ResponseWriter, status int, name string, p *Page) {
	t := s.templates[name]
	if t == nil {
		http.Error(w, "no page "+name, http.StatusInternalServerError)
		return
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		s.log().Error("console: rendering", "page", name, "err", err)
		http.Error(w, "rendering "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// partial writes the template named partial of page name alone (htmx swaps).
func (s *Server) partial(w http.ResponseWriter, name, partial string, data any) {
	t := s.templates[name]
	if t == nil {
		http.Error(w, "no page "+name, http.StatusInternalServerError)
		return
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, partial, data); err != nil {
		s.log().Error("console: rendering", "page", name, "partial", partial, "err", err)
		http.Error(w, "rendering "+partial+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// fail shows err readably: the server's message as a page, or as plain text
// to an htmx request (the front end puts it in the error box).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, section string, err error) {
	status, msg := ErrorMessage(err)
	if r.Header.Get("HX-Request") != "" {
		http.Error(w, msg, status)
		return
	}
	s.render(w, status, "error", s.page(r, section, "", "Something went wrong", msg))
}

// ErrorMessage turns an error from a supervisor into an HTTP status and a
// sentence for a person.
func ErrorMessage(err error) (int, string) {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		code := int(s.Code)
		if code < 400 {
			code = http.StatusBadGateway
		}
		return code, s.Message
	}
	var ue *UserError
	if errors.As(err, &ue) {
		return ue.Status, ue.Msg
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusGatewayTimeout, "the supervisor did not answer in time: " + err.Error()
	}
	return http.StatusBadGateway, err.Error()
}

// UserError is bad input, said to the user as it is.
type UserError struct {
	Status int
	Msg    string
}

func (e *UserError) Error() string { return e.Msg }

// badRequest is a UserError with status 400.
func badRequest(format string, args ...any) error {
	return &UserError{Status: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...)}
}

// supervisor returns the configured supervisor named name, or a UserError.
func (s *Server) supervisor(name string) (*fleet.Supervisor, error) {
	if name == "" && len(s.Fleet.Supervisors) == 1 {
		return s.Fleet.Supervisors[0], nil
	}
	sup := s.Fleet.Get(name)
	if sup == nil {
		return nil, &UserError{Status: http.StatusNotFound, Msg: fmt.Sprintf("no supervisor named %q is configured", name)}
	}
	return sup, nil
}
