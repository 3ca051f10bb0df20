package clienttest

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
)

const apiPath = "/apis/" + v1alpha1.Group + "/" + v1alpha1.Version

// Server is an in-memory implementation of the supervisor API contract.
type Server struct {
	// URL is the server address for client.Config.Server.
	URL string
	// CAFile is the PEM file of the TLS server certificate (TLS servers only).
	CAFile string

	reg    *apischema.Registry
	tokens map[string][]string // token → namespaces ("*" = all); nil = no auth
	srv    *httptest.Server

	mu       sync.Mutex
	rv       int64
	floor    int64 // watches below this version get 410 Gone
	objects  map[string]*unstructured.Unstructured
	history  map[string][]historyEntry
	log      []logEvent
	watchers map[*watcher]struct{}
	requests map[string]int
	before   func(r *http.Request)
}

// BeforeServe sets a function run at the start of every request, before the
// server looks at it (tests use it to interleave concurrent writes).
func (s *Server) BeforeServe(fn func(r *http.Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before = fn
}

type historyEntry struct {
	ResourceVersion string         `json:"resourceVersion"`
	Type            string         `json:"type"`
	Time            string         `json:"time"`
	Object          map[string]any `json:"object"`
}

type logEvent struct {
	rv     int64
	typ    string
	plural string
	obj    *unstructured.Unstructured
}

type watcher struct {
	plural, namespace string
	selector          labels.Selector
	ch                chan logEvent
}

func newServer(tokens map[string][]string) *Server {
	return &Server{
		reg:      apischema.Default(),
		tokens:   tokens,
		objects:  map[string]*unstructured.Unstructured{},
		history:  map[string][]historyEntry{},
		watchers: map[*watcher]struct{}{},
		requests: map[string]int{},
	}
}

// NewUnix starts a server on a unix socket in a temporary directory; it is
// closed when the test ends.
func NewUnix(t testing.TB) *Server {
	t.Helper()
	s := newServer(nil)
	dir, err := os.MkdirTemp("", "aictl-sock-") // short path: unix socket paths are limited to ~100 bytes
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "supervisor.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("listen %s: %v", sock, err)
	}
	s.srv = httptest.NewUnstartedServer(s)
	s.srv.Listener = l
	s.srv.Start()
	t.Cleanup(s.Close)
	s.URL = "unix://" + sock
	return s
}

// NewTLS starts an HTTPS server on loopback that requires a bearer token from
// tokens (token → namespaces it may touch, "*" for all).
func NewTLS(t testing.TB, tokens map[string][]string) *Server {
	t.Helper()
	s := newServer(tokens)
	s.srv = httptest.NewTLSServer(s)
	t.Cleanup(s.Close)
	s.URL = s.srv.URL
	cert := s.srv.Certificate()
	s.CAFile = filepath.Join(t.TempDir(), "ca.pem")
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	if err := os.WriteFile(s.CAFile, data, 0o600); err != nil {
		t.Fatalf("write CA: %v", err)
	}
	if _, err := x509.ParseCertificate(cert.Raw); err != nil {
		t.Fatalf("parse server cert: %v", err)
	}
	return s
}

// Close stops the server and ends every watch.
func (s *Server) Close() {
	s.EndWatches()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Requests returns how many requests were served per "METHOD path" (path
// without query).
func (s *Server) Requests(method, path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[method+" "+path]
}

// Object returns a copy of a stored object, or nil.
func (s *Server) Object(plural, namespace, name string) *unstructured.Unstructured {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.objects[key(plural, namespace, name)]; o != nil {
		return o.DeepCopy()
	}
	return nil
}

// Mutate changes a stored object in place as a controller would (status or
// finalizers), recording a MODIFIED event; removing the last finalizer of a
// deleting object removes it. It fails when the object is absent.
func (s *Server) Mutate(plural, namespace, name string, fn func(obj *unstructured.Unstructured)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(plural, namespace, name)
	cur := s.objects[k]
	if cur == nil {
		return fmt.Errorf("%s %s/%s not found", plural, namespace, name)
	}
	obj := cur.DeepCopy()
	fn(obj)
	s.store(plural, k, obj, "STATUS")
	return nil
}

// EndWatches ends every open watch stream cleanly, as a server does when it
// recycles long-lived requests; clients are expected to resume.
func (s *Server) EndWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		close(w.ch)
		delete(s.watchers, w)
	}
}

// Watches returns how many watch streams are open.
func (s *Server) Watches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watchers)
}

// Compact makes every resourceVersion below the current one too old to watch from.
func (s *Server) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.floor = s.rv
	s.log = nil
}

func key(plural, namespace, name string) string { return plural + "/" + namespace + "/" + name }

// store writes obj under k with a new resourceVersion and records the event;
// a deleting object without finalizers is removed instead. Callers hold mu.
func (s *Server) store(plural, k string, obj *unstructured.Unstructured, histType string) {
	s.rv++
	obj.SetResourceVersion(strconv.FormatInt(s.rv, 10))
	typ := "MODIFIED"
	if s.objects[k] == nil {
		typ, histType = "ADDED", "ADDED"
	}
	if obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0 {
		delete(s.objects, k)
		typ, histType = "DELETED", "DELETED"
	} else {
		s.objects[k] = obj
	}
	s.history[k] = append(s.history[k], historyEntry{
		ResourceVersion: obj.GetResourceVersion(), Type: histType,
		Time: time.Now().UTC().Format(time.RFC3339), Object: runtime.DeepCopyJSON(obj.Object),
	})
	ev := logEvent{rv: s.rv, typ: typ, plural: plural, obj: obj.DeepCopy()}
	s.log = append(s.log, ev)
	for w := range s.watchers {
		if w.matches(ev) {
			select {
			case w.ch <- ev:
			default: // a watcher this far behind is dropped, as a real server would
				close(w.ch)
				delete(s.watchers, w)
			}
		}
	}
}

func (w *watcher) matches(ev logEvent) bool {
	if ev.plural != w.plural || (w.namespace != "" && ev.obj.GetNamespace() != w.namespace) {
		return false
	}
	return w.selector.Matches(labels.Set(ev.obj.GetLabels()))
}

// ServeHTTP implements the contract.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests[r.Method+" "+r.URL.Path]++
	before := s.before
	s.mu.Unlock()
	if before != nil {
		before(r)
	}
	ns, plural, name, sub, ok := parsePath(r.URL.Path)
	if !ok && r.URL.Path != apiPath {
		writeErr(rw, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
		return
	}
	if err := s.authorize(r, ns); err != nil {
		writeErr(rw, err)
		return
	}
	if r.URL.Path == apiPath {
		s.discovery(rw)
		return
	}
	res, found := s.reg.Lookup(plural)
	if !found || res.Plural != plural {
		writeErr(rw, apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.Group, Resource: plural}, ""))
		return
	}
	q := r.URL.Query()
	dry := q.Get("dryRun") == "All"
	switch {
	case name == "" && r.Method == http.MethodGet && q.Get("watch") == "true":
		s.watch(rw, r, res, ns)
	case name == "" && r.Method == http.MethodGet:
		s.list(rw, res, ns, q.Get("labelSelector"))
	case name == "" && r.Method == http.MethodPost && ns != "":
		s.create(rw, r, res, ns, dry)
	case name != "" && ns != "" && sub == "" && r.Method == http.MethodGet:
		s.get(rw, res, ns, name)
	case name != "" && ns != "" && sub == "status" && r.Method == http.MethodGet:
		s.get(rw, res, ns, name)
	case name != "" && ns != "" && sub == "history" && r.Method == http.MethodGet:
		s.mu.Lock()
		h := s.history[key(res.Plural, ns, name)]
		s.mu.Unlock()
		writeJSON(rw, http.StatusOK, map[string]any{"items": h})
	case name != "" && ns != "" && (sub == "" || sub == "status") && (r.Method == http.MethodPut || r.Method == http.MethodPatch):
		s.update(rw, r, res, ns, name, sub == "status", dry)
	case name != "" && ns != "" && sub == "" && r.Method == http.MethodDelete:
		s.delete(rw, res, ns, name)
	default:
		writeErr(rw, apierrors.NewMethodNotSupported(res.GroupResource(), r.Method))
	}
}

func parsePath(p string) (ns, plural, name, sub string, ok bool) {
	rest, found := strings.CutPrefix(p, apiPath+"/")
	if !found {
		return "", "", "", "", false
	}
	parts := strings.Split(rest, "/")
	if parts[0] == "namespaces" {
		if len(parts) < 3 {
			return "", "", "", "", false
		}
		ns, parts = parts[1], parts[2:]
	}
	switch len(parts) {
	case 1:
		return ns, parts[0], "", "", true
	case 2:
		return ns, parts[0], parts[1], "", true
	case 3:
		return ns, parts[0], parts[1], parts[2], true
	}
	return "", "", "", "", false
}

func (s *Server) authorize(r *http.Request, ns string) error {
	if s.tokens == nil {
		return nil
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	allowed, known := s.tokens[tok]
	if !ok || !known {
		return apierrors.NewUnauthorized("a valid bearer token is required")
	}
	for _, a := range allowed {
		if a == "*" || a == ns {
			return nil
		}
	}
	what := "all namespaces"
	if ns != "" {
		what = fmt.Sprintf("namespace %q", ns)
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: v1alpha1.Group}, "",
		fmt.Errorf("the token may not access %s", what))
}

func (s *Server) discovery(rw http.ResponseWriter) {
	list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: v1alpha1.GroupVersion.String()}
	for _, res := range s.reg.Resources() {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: res.Plural, SingularName: res.Singular,
			Namespaced: true, Kind: res.Kind, ShortNames: res.ShortNames,
			Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}})
	}
	writeJSON(rw, http.StatusOK, list)
}

func (s *Server) list(rw http.ResponseWriter, res *apischema.Resource, ns, selector string) {
	sel, err := labels.Parse(selector)
	if err != nil {
		writeErr(rw, apierrors.NewBadRequest(fmt.Sprintf("labelSelector: %v", err)))
		return
	}
	s.mu.Lock()
	items := []any{}
	prefix := res.Plural + "/"
	if ns != "" {
		prefix += ns + "/"
	}
	keys := make([]string, 0)
	for k := range s.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		o := s.objects[k]
		if sel.Matches(labels.Set(o.GetLabels())) {
			items = append(items, runtime.DeepCopyJSON(o.Object))
		}
	}
	rv := strconv.FormatInt(s.rv, 10)
	s.mu.Unlock()
	writeJSON(rw, http.StatusOK, map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": res.ListKind,
		"metadata": map[string]any{"resourceVersion": rv}, "items": items,
	})
}

func (s *Server) get(rw http.ResponseWriter, res *apischema.Resource, ns, name string) {
	s.mu.Lock()
	o := s.objects[key(res.Plural, ns, name)]
	s.mu.Unlock()
	if o == nil {
		writeErr(rw, apierrors.NewNotFound(res.GroupResource(), name))
		return
	}
	writeJSON(rw, http.StatusOK, o.Object)
}

func (s *Server) create(rw http.ResponseWriter, r *http.Request, res *apischema.Resource, ns string, dry bool) {
	body, _ := io.ReadAll(r.Body)
	obj, err := s.reg.Decode(res, ns, body)
	if err != nil {
		writeErr(rw, err)
		return
	}
	if obj.GetResourceVersion() != "" { // as the Kubernetes API server does
		writeErr(rw, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created"))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(res.Plural, ns, obj.GetName())
	if s.objects[k] != nil {
		writeErr(rw, apierrors.NewAlreadyExists(res.GroupResource(), obj.GetName()))
		return
	}
	delete(obj.Object, "status")
	obj.SetUID(typesUID())
	obj.SetGeneration(1)
	obj.SetCreationTimestamp(metav1.Now())
	obj.SetDeletionTimestamp(nil)
	if dry {
		writeJSON(rw, http.StatusCreated, obj.Object)
		return
	}
	s.store(res.Plural, k, obj, "ADDED")
	writeJSON(rw, http.StatusCreated, obj.Object)
}

func (s *Server) update(rw http.ResponseWriter, r *http.Request, res *apischema.Resource, ns, name string, status, dry bool) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(res.Plural, ns, name)
	cur := s.objects[k]
	if cur == nil {
		writeErr(rw, apierrors.NewNotFound(res.GroupResource(), name))
		return
	}
	if r.Method == http.MethodPatch {
		if ct := r.Header.Get("Content-Type"); ct != "application/merge-patch+json" {
			writeErr(rw, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType, Message: fmt.Sprintf("content type %q is not supported", ct)}})
			return
		}
		curJSON, _ := json.Marshal(cur.Object)
		merged, err := jsonpatch.MergePatch(curJSON, body)
		if err != nil {
			writeErr(rw, apierrors.NewBadRequest(fmt.Sprintf("merge patch: %v", err)))
			return
		}
		body = merged
	}
	in, err := s.reg.Decode(res, ns, body)
	if err != nil {
		writeErr(rw, err)
		return
	}
	if in.GetName() != name {
		writeErr(rw, apierrors.NewBadRequest(fmt.Sprintf("metadata.name: %q does not match the path (%q)", in.GetName(), name)))
		return
	}
	if rv := in.GetResourceVersion(); rv != "" && rv != cur.GetResourceVersion() {
		writeErr(rw, apierrors.NewConflict(res.GroupResource(), name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again")))
		return
	}
	next := cur.DeepCopy()
	hist := "MODIFIED"
	if status {
		hist = "STATUS"
		if st, ok := in.Object["status"]; ok {
			next.Object["status"] = st
		} else {
			delete(next.Object, "status")
		}
	} else {
		for _, f := range []string{"spec"} {
			if v, ok := in.Object[f]; ok {
				next.Object[f] = v
			} else {
				delete(next.Object, f)
			}
		}
		next.SetLabels(in.GetLabels())
		next.SetAnnotations(in.GetAnnotations())
		next.SetFinalizers(in.GetFinalizers())
		if !reflect.DeepEqual(cur.Object["spec"], next.Object["spec"]) {
			next.SetGeneration(cur.GetGeneration() + 1)
		}
	}
	if reflect.DeepEqual(cur.Object, next.Object) || dry {
		writeJSON(rw, http.StatusOK, next.Object)
		return
	}
	s.store(res.Plural, k, next, hist)
	writeJSON(rw, http.StatusOK, next.Object)
}

func (s *Server) delete(rw http.ResponseWriter, res *apischema.Resource, ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(res.Plural, ns, name)
	cur := s.objects[k]
	if cur == nil {
		writeErr(rw, apierrors.NewNotFound(res.GroupResource(), name))
		return
	}
	next := cur.DeepCopy()
	if next.GetDeletionTimestamp() == nil {
		now := metav1.Now()
		next.SetDeletionTimestamp(&now)
		s.store(res.Plural, k, next, "TERMINATING") // history type of the real store
	}
	if s.objects[k] != nil {
		writeJSON(rw, http.StatusOK, s.objects[k].Object)
		return
	}
	writeJSON(rw, http.StatusOK, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{Name: name, Group: v1alpha1.Group, Kind: res.Plural}})
}

func (s *Server) watch(rw http.ResponseWriter, r *http.Request, res *apischema.Resource, ns string) {
	q := r.URL.Query()
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		writeErr(rw, apierrors.NewBadRequest(fmt.Sprintf("labelSelector: %v", err)))
		return
	}
	w := &watcher{plural: res.Plural, namespace: ns, selector: sel, ch: make(chan logEvent, 4096)}
	s.mu.Lock()
	from := s.rv
	if v := q.Get("resourceVersion"); v != "" {
		from, err = strconv.ParseInt(v, 10, 64)
		if err != nil {
			s.mu.Unlock()
			writeErr(rw, apierrors.NewBadRequest(fmt.Sprintf("resourceVersion %q is not a number", v)))
			return
		}
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(rw)
	flusher, _ := rw.(http.Flusher)
	if from < s.floor {
		s.mu.Unlock()
		st := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, s.floor)).Status()
		_ = enc.Encode(map[string]any{"type": "ERROR", "object": st})
		return
	}
	var backlog []logEvent
	for _, ev := range s.log {
		if ev.rv > from && w.matches(ev) {
			backlog = append(backlog, ev)
		}
	}
	s.watchers[w] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watchers, w)
		s.mu.Unlock()
	}()
	if q.Get("allowWatchBookmarks") == "true" {
		_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": res.Kind,
			"metadata": map[string]any{"resourceVersion": strconv.FormatInt(from, 10)}}})
	}
	for _, ev := range backlog {
		_ = enc.Encode(map[string]any{"type": ev.typ, "object": ev.obj.Object})
	}
	if flusher != nil {
		flusher.Flush()
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-w.ch:
			if !ok {
				return
			}
			if ev.rv <= from {
				continue
			}
			if err := enc.Encode(map[string]any{"type": ev.typ, "object": ev.obj.Object}); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

func writeErr(rw http.ResponseWriter, err error) {
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		se = apierrors.NewInternalError(err)
	}
	st := se.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	writeJSON(rw, int(st.Code), st)
}

func writeJSON(rw http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	_, _ = rw.Write(buf.Bytes())
}

func typesUID() types.UID { return types.UID(uuid.NewString()) }
