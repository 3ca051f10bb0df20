package apiserver

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/store"
)

// Storage is what the server needs from the event store.
type Storage interface {
	Create(ctx context.Context, resource string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
	Get(ctx context.Context, resource, namespace, name string) (*unstructured.Unstructured, error)
	List(ctx context.Context, resource, namespace string, sel labels.Selector) (*unstructured.UnstructuredList, error)
	Update(ctx context.Context, resource string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
	UpdateStatus(ctx context.Context, resource string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
	Delete(ctx context.Context, resource, namespace, name string, opts store.DeleteOptions) (*unstructured.Unstructured, error)
	Watch(ctx context.Context, resource, namespace string, opts store.WatchOptions) (watch.Interface, error)
	History(ctx context.Context, resource, namespace, name string) ([]store.HistoryEvent, error)
}

// Operation is the kind of write being admitted.
type Operation string

// Admitted operations.
const (
	OpCreate Operation = "CREATE"
	OpUpdate Operation = "UPDATE"
)

// Admitter checks a validated write against the rest of the store (references,
// one-live-per-agent, immutable fields). old is nil on create. Writes of one
// resource are serialised while an Admitter for it runs, so checks that read
// other objects cannot race with each other.
type Admitter interface {
	Admit(ctx context.Context, op Operation, old, obj *unstructured.Unstructured) error
}

// StatelessAdmitter is an Admitter that judges the written object alone (it
// reads nothing else): its resource's writes are not serialised.
type StatelessAdmitter interface {
	Admitter
	Stateless()
}

// Options configures a Server.
type Options struct {
	Store    Storage
	Registry *apischema.Registry
	Logger   *slog.Logger
	// Admitters run per resource plural.
	Admitters map[string]Admitter
	// Metrics records requests; nil disables.
	Metrics *Metrics
}

// Server is the HTTP API. Mount Handler() behind an authenticating listener.
type Server struct {
	opts     Options
	mux      *http.ServeMux
	writeMus map[string]*sync.Mutex
	subres   map[string]http.Handler
}

// New returns a server for opts.
func New(opts Options) *Server {
	if opts.Registry == nil {
		opts.Registry = apischema.Default()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), writeMus: map[string]*sync.Mutex{}, subres: map[string]http.Handler{}}
	for plural, a := range opts.Admitters {
		if _, ok := a.(StatelessAdmitter); !ok {
			s.writeMus[plural] = &sync.Mutex{}
		}
	}
	s.mux.HandleFunc("GET "+apischema.APIPath, s.discovery)
	s.mux.HandleFunc(apischema.APIPath+"/", s.route)
	return s
}

// HandleSubresource serves GET/POST/… on /namespaces/{ns}/{plural}/{name}/{sub}
// (and deeper paths below it) with h. The request is authenticated and its
// namespace authorised before h runs; h reads the parts with PathParts.
func (s *Server) HandleSubresource(plural, sub string, h http.Handler) {
	s.subres[plural+"/"+sub] = h
}

// Handle mounts an extra endpoint under the API prefix (e.g. "/spendhistory"),
// authenticated like every other request.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
}

// Handler returns the API handler; callers wrap it with authentication.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		s.mux.ServeHTTP(rec, r)
		s.opts.Metrics.observe(r, rec.code, time.Since(start))
	})
}

// Authenticated wraps h: requests get the principal of authn, or a 401 Status.
func Authenticated(h http.Handler, authn func(*http.Request) (*Principal, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := authn(r)
		if err != nil {
			writeError(w, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// PathParts is the parsed path of a namespaced request.
type PathParts struct {
	Namespace, Plural, Name, Subresource string
	// Rest is anything after the subresource segment.
	Rest string
}

type pathPartsKey struct{}

// PathPartsFrom returns the parsed path of a subresource request.
func PathPartsFrom(ctx context.Context) (PathParts, bool) {
	p, ok := ctx.Value(pathPartsKey{}).(PathParts)
	return p, ok
}

// LeafSubresource returns the parts of a request for a subresource that has
// no deeper path and serves only method; otherwise it writes a NotFound or
// MethodNotSupported Status on gr and returns false.
func LeafSubresource(w http.ResponseWriter, r *http.Request, gr schema.GroupResource, method string) (PathParts, bool) {
	parts, ok := PathPartsFrom(r.Context())
	if !ok || parts.Rest != "" {
		writeError(w, apierrors.NewNotFound(gr, r.URL.Path))
		return PathParts{}, false
	}
	if r.Method != method {
		writeError(w, apierrors.NewMethodNotSupported(gr, r.Method+" "+parts.Subresource))
		return PathParts{}, false
	}
	return parts, true
}

func parsePath(path string) (PathParts, bool) {
	rest := strings.TrimPrefix(path, apischema.APIPath+"/")
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	var p PathParts
	if len(segs) >= 2 && segs[0] == "namespaces" {
		p.Namespace = segs[1]
		segs = segs[2:]
	}
	if len(segs) == 0 || segs[0] == "" {
		return p, false
	}
	p.Plural = segs[0]
	if len(segs) > 1 {
		p.Name = segs[1]
	}
	if len(segs) > 2 {
		p.Subresource = segs[2]
	}
	if len(segs) > 3 {
		p.Rest = strings.Join(segs[3:], "/")
	}
	return p, true
}

func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	parts, ok := parsePath(r.URL.Path)
	if !ok {
		writeError(w, apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource("").GroupResource(), r.URL.Path))
		return
	}
	res, ok := s.opts.Registry.Lookup(parts.Plural)
	if !ok || res.Plural != parts.Plural {
		writeError(w, apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource(parts.Plural).GroupResource(), ""))
		return
	}
	principal, ok := PrincipalFrom(r.Context())
	if !ok {
		writeError(w, apierrors.NewUnauthorized("unauthenticated request"))
		return
	}
	switch {
	case !res.Namespaced && parts.Namespace != "":
		writeError(w, apierrors.NewBadRequest(res.Kind+" is cluster-scoped: its path has no /namespaces/{namespace}/"))
		return
	case res.Namespaced && parts.Namespace == "" && parts.Name != "":
		writeError(w, apierrors.NewBadRequest("a named "+res.Singular+" needs /namespaces/{namespace}/ in the path"))
		return
	}
	if err := Authorize(principal, requestAttributes(r, res.Plural, parts, !res.Namespaced)); err != nil {
		writeError(w, err)
		return
	}
	h := &request{s: s, res: res, parts: parts, w: w, r: r}
	switch {
	case parts.Name == "":
		h.collection()
	case parts.Subresource == "":
		h.object()
	case parts.Subresource == "status" && parts.Rest == "":
		h.status()
	case parts.Subresource == "history" && parts.Rest == "" && r.Method == http.MethodGet:
		h.history()
	default:
		if sub, ok := s.subres[res.Plural+"/"+parts.Subresource]; ok {
			sub.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), pathPartsKey{}, parts)))
			return
		}
		writeError(w, apierrors.NewNotFound(res.GroupResource(), parts.Name+"/"+parts.Subresource))
	}
}

// requestAttributes returns what a request on a kind's routes does.
func requestAttributes(r *http.Request, plural string, parts PathParts, clusterScoped bool) Attributes {
	a := Attributes{Verb: VerbOf(r), Namespace: parts.Namespace, Resource: plural, Subresource: parts.Subresource,
		Name: parts.Name, ClusterScoped: clusterScoped}
	if parts.Name == "" && a.Verb == VerbGet {
		a.Verb = VerbList
		if w := r.URL.Query().Get("watch"); w == "true" || w == "1" {
			a.Verb = VerbWatch
		}
	}
	return a
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// Flush lets watch streams flush through the recorder.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
