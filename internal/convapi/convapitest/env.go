package convapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyclient"
	"aicli.dev/aicli/guest/server"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/convapi"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/transcript"
)

// Env is the conversation API served in-process over loopback HTTP: the real
// API server over a pebble store in a temporary directory (apiservertest),
// and the fakes below at the seams.
type Env struct {
	// URL is the server address (http://127.0.0.1:port), as a client's Server.
	URL string
	// Store is the real object store.
	Store *store.Store
	// Sessions holds the live fake PTYs by conversation uid.
	Sessions *Sessions
	// Transcripts is the in-memory transcript store.
	Transcripts *Transcripts
	// Log is the durable transcript log in Store that the API serves instead
	// of Transcripts when started WithStoreTranscripts (nil otherwise).
	Log *transcript.StoreLog
	// Attribution records Expect calls.
	Attribution *Attribution

	// Server is the API server and its test hooks (request counts, watches).
	Server *apiservertest.Server
}

// Option changes how Start composes the Env.
type Option func(*config)

type config struct {
	noTranscripts    bool
	storeTranscripts bool
	principal        *apiserver.Principal
	budget           convapi.Budget
}

// WithBudget serves the API with b as the agents' budget.
func WithBudget(b convapi.Budget) Option { return func(c *config) { c.budget = b } }

// WithoutTranscripts serves the API with no transcript store.
func WithoutTranscripts() Option { return func(c *config) { c.noTranscripts = true } }

// WithStoreTranscripts serves the durable transcript log (Env.Log, in the
// real store) instead of the in-memory one.
func WithStoreTranscripts() Option { return func(c *config) { c.storeTranscripts = true } }

// AsPrincipal authenticates every request as p (default: the local admin).
func AsPrincipal(p *apiserver.Principal) Option { return func(c *config) { c.principal = p } }

// Start serves a fresh Env until the test ends.
func Start(tb testing.TB, opts ...Option) *Env {
	tb.Helper()
	cfg := config{principal: apiserver.LocalAdmin}
	for _, o := range opts {
		o(&cfg)
	}
	srv := apiservertest.New(tb)
	e := &Env{Store: srv.Store, Sessions: &Sessions{}, Transcripts: NewTranscripts(), Attribution: &Attribution{}, Server: srv}
	o := convapi.Options{Store: srv.Store, Sessions: e.Sessions, Transcripts: e.Transcripts, Attribution: e.Attribution,
		Logger: slog.New(slog.DiscardHandler)}
	switch {
	case cfg.noTranscripts:
		o.Transcripts = nil
	case cfg.storeTranscripts:
		e.Log = &transcript.StoreLog{Store: srv.Store}
		o.Transcripts = e.Log
	}
	o.Budget = cfg.budget
	convapi.New(o).Register(srv.API)
	e.URL = srv.ServeLoopback(tb, cfg.principal)
	return e
}

// ServeUnix serves the same API on a unix socket, as the supervisor does for
// its local admin, and returns the socket's unix:// address.
func (e *Env) ServeUnix(tb testing.TB) string {
	tb.Helper()
	return e.Server.ServeUnix(tb)
}

// ServeTLS serves the same API over TLS where only the bearer token tok is
// accepted (as a principal for every namespace). It returns the https://
// address and a PEM file of the server's certificate.
func (e *Env) ServeTLS(tb testing.TB, tok string) (url, caFile string) {
	tb.Helper()
	return e.Server.ServeTLS(tb, map[string][]string{tok: {"*"}})
}

// ServeTLSTokens serves the same API over TLS where only the given token
// entries are accepted, by raw token (e.g. one with Monitors).
func (e *Env) ServeTLSTokens(tb testing.TB, tokens map[string]apiserver.Token) (url, caFile string) {
	tb.Helper()
	return e.Server.ServeTLSTokens(tb, tokens)
}

// Path is the API path of a named object and its subresource.
func Path(plural, ns, name string, sub ...string) string {
	p := apischema.APIPath + "/namespaces/" + ns + "/" + plural
	if name != "" {
		p += "/" + name
	}
	for _, s := range sub {
		p += "/" + s
	}
	return p
}

// Do sends one request to the Env and returns the status code and body.
func (e *Env) Do(tb testing.TB, method, path, contentType string, body []byte) (int, []byte) {
	tb.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, e.URL+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return resp.StatusCode, data
}

// create POSTs obj through the API (validation and admission included).
func (e *Env) create(tb testing.TB, plural, ns string, obj map[string]any) *unstructured.Unstructured {
	tb.Helper()
	body, err := json.Marshal(obj)
	if err != nil {
		tb.Fatal(err)
	}
	code, data := e.Do(tb, http.MethodPost, Path(plural, ns, ""), "application/json", body)
	if code != http.StatusCreated {
		tb.Fatalf("create %s in %s: HTTP %d: %s", plural, ns, code, data)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(data); err != nil {
		tb.Fatal(err)
	}
	return out
}

// CreateAgent creates a fake-harness Agent.
func (e *Env) CreateAgent(tb testing.TB, ns, name string) *unstructured.Unstructured {
	tb.Helper()
	return e.create(tb, "agents", ns, map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Agent",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"harness": "fake"},
	})
}

// CreateConversation creates a Conversation of agent in the desired state.
func (e *Env) CreateConversation(tb testing.TB, ns, name, agent string, desired v1alpha1.ConversationState) *unstructured.Unstructured {
	tb.Helper()
	return e.create(tb, "conversations", ns, map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Conversation",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"agentRef": agent, "desiredState": string(desired)},
	})
}

// CreateMonitorAttachment creates MonitorAttachment name in ns: monitor
// watches agent's conversations (only conversation, when set).
func (e *Env) CreateMonitorAttachment(tb testing.TB, ns, name, monitor, agent, conversation string) *unstructured.Unstructured {
	tb.Helper()
	target := map[string]any{"agent": agent}
	if conversation != "" {
		target["conversation"] = conversation
	}
	return e.create(tb, "monitorattachments", ns, map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "MonitorAttachment",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"monitor": monitor, "target": target,
			"trigger": map[string]any{"keywords": []any{map[string]any{"text": "panic"}}}},
	})
}

// Live gives conversation ns/name a fresh fake PTY, as a connected guest.
func (e *Env) Live(tb testing.TB, ns, name string) *PTY {
	tb.Helper()
	obj, err := e.Store.Get(context.Background(), "conversations", ns, name)
	if err != nil {
		tb.Fatalf("conversation %s/%s: %v", ns, name, err)
	}
	p := NewPTY()
	e.Sessions.Set(string(obj.GetUID()), p)
	return p
}

// LiveRemote is Live through the real remote proxy: the fake PTY is served
// by the guest's HTTP server (guest/server) and the conversation's live PTY is
// a ptyclient over loopback HTTP, as the supervisor sees a guest.
func (e *Env) LiveRemote(tb testing.TB, ns, name string) *PTY {
	tb.Helper()
	p := NewPTY()
	guest := httptest.NewServer(server.Handler(p))
	tb.Cleanup(guest.Close)
	e.Sessions.Set(e.UID(tb, ns, name), ptyclient.New(guest.Client(), guest.URL))
	return p
}

// SetReady writes conversation ns/name's Ready condition for its current
// generation, as the conversation controller does (Ready=True: container,
// guest and CLI are up).
func (e *Env) SetReady(tb testing.TB, ns, name string, status metav1.ConditionStatus, reason, message string) {
	tb.Helper()
	e.Server.Mutate(tb, "conversations", ns, name, func(o *unstructured.Unstructured) {
		ready := map[string]any{"type": v1alpha1.ConditionReady, "status": string(status), "reason": reason,
			"message": message, "observedGeneration": o.GetGeneration(),
			"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		kept := []any{ready}
		for _, c := range conds {
			if m, ok := c.(map[string]any); !ok || m["type"] != v1alpha1.ConditionReady {
				kept = append(kept, c)
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, kept, "status", "conditions"); err != nil {
			tb.Fatal(err)
		}
	})
}

// UID returns the uid of conversation ns/name.
func (e *Env) UID(tb testing.TB, ns, name string) string {
	tb.Helper()
	obj, err := e.Store.Get(context.Background(), "conversations", ns, name)
	if err != nil {
		tb.Fatalf("conversation %s/%s: %v", ns, name, err)
	}
	return string(obj.GetUID())
}

// Conversations lists the conversation names of agent in ns.
func (e *Env) Conversations(tb testing.TB, ns, agent string) []string {
	tb.Helper()
	list, err := e.Store.List(context.Background(), "conversations", ns, labels.Everything())
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, item := range list.Items {
		if a, _, _ := unstructured.NestedString(item.Object, "spec", "agentRef"); a == agent {
			names = append(names, item.GetName())
		}
	}
	return names
}
