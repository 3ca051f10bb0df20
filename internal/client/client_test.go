package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/client"
)

func agent(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "aicli.dev/v1alpha1", "kind": "Agent",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     spec,
	}}
}

func newClient(t *testing.T, cfg client.Config) *client.Client {
	t.Helper()
	c, err := client.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// unixServer serves the real API server, over a store in a temporary
// directory, on a unix socket.
func unixServer(t *testing.T) (*apiservertest.Server, string) {
	t.Helper()
	srv := apiservertest.New(t)
	return srv, srv.ServeUnix(t)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestCRUDOverUnixSocket(t *testing.T) {
	_, url := unixServer(t)
	c := newClient(t, client.Config{Server: url})
	ctx := ctx(t)

	created, err := c.Create(ctx, agent("a1", map[string]any{"harness": "fake"}), client.WriteOptions{})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if created.GetResourceVersion() == "" || created.GetGeneration() != 1 || created.GetUID() == "" {
		t.Fatalf("created metadata not set: %v", created.Object["metadata"])
	}
	if got, _, _ := unstructured.NestedFieldNoCopy(created.Object, "spec", "resources", "memoryMiB"); got != int64(2048) {
		t.Fatalf("server default not returned as int64: %#v", got)
	}

	got, err := c.Get(ctx, "agents", "default", "a1")
	if err != nil || got.GetUID() != created.GetUID() {
		t.Fatalf("Get: %v %v", got, err)
	}

	_, err = c.Get(ctx, "agents", "default", "missing")
	if !apierrors.IsNotFound(err) {
		t.Fatalf("Get missing: want NotFound, got %v", err)
	}

	upd := got.DeepCopy()
	_ = unstructured.SetNestedField(upd.Object, "m2", "spec", "model")
	updated, err := c.Update(ctx, upd, client.WriteOptions{})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if updated.GetGeneration() != 2 {
		t.Fatalf("spec change must bump generation to 2, got %d", updated.GetGeneration())
	}

	// A stale resourceVersion is a conflict.
	_, err = c.Update(ctx, upd, client.WriteOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("stale update: want Conflict, got %v", err)
	}

	// Status writes do not bump generation.
	st := updated.DeepCopy()
	_ = unstructured.SetNestedField(st.Object, int64(2), "status", "observedGeneration")
	stOut, err := c.UpdateStatus(ctx, st, client.WriteOptions{})
	if err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	if stOut.GetGeneration() != 2 || stOut.GetResourceVersion() == updated.GetResourceVersion() {
		t.Fatalf("status write: generation %d rv %s (was %s)", stOut.GetGeneration(), stOut.GetResourceVersion(), updated.GetResourceVersion())
	}

	patched, err := c.Patch(ctx, "agents", "default", "a1", []byte(`{"metadata":{"labels":{"team":"x"}}}`), client.WriteOptions{})
	if err != nil || patched.GetLabels()["team"] != "x" {
		t.Fatalf("Patch: %v %v", patched, err)
	}

	list, err := c.List(ctx, "agents", "default", client.ListOptions{LabelSelector: "team=x"})
	if err != nil || len(list.Items) != 1 || list.Items[0].GetKind() != "Agent" {
		t.Fatalf("List by label: %v %v", list, err)
	}
	list, err = c.List(ctx, "agents", "", client.ListOptions{LabelSelector: "team=y"})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("List all namespaces by other label: %v %v", list, err)
	}

	hist, err := c.History(ctx, "agents", "default", "a1")
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	var types []string
	for _, h := range hist {
		types = append(types, h.Type)
	}
	if strings.Join(types, ",") != "ADDED,MODIFIED,STATUS,MODIFIED" {
		t.Fatalf("history types = %v", types)
	}

	gone, err := c.Delete(ctx, "agents", "default", "a1")
	if err != nil || gone != nil {
		t.Fatalf("Delete: obj %v err %v", gone, err)
	}
	if _, err := c.Delete(ctx, "agents", "default", "a1"); !apierrors.IsNotFound(err) {
		t.Fatalf("second Delete: want NotFound, got %v", err)
	}
}

func TestDeleteKeptByFinalizer(t *testing.T) {
	_, url := unixServer(t)
	c := newClient(t, client.Config{Server: url})
	ctx := ctx(t)
	a := agent("fin", map[string]any{"harness": "fake"})
	a.SetFinalizers([]string{"aicli.dev/test"})
	if _, err := c.Create(ctx, a, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	kept, err := c.Delete(ctx, "agents", "default", "fin")
	if err != nil || kept == nil || kept.GetDeletionTimestamp() == nil {
		t.Fatalf("Delete with finalizer: want object with deletionTimestamp, got %v %v", kept, err)
	}
	hist, err := c.History(ctx, "agents", "default", "fin")
	if err != nil || len(hist) != 2 || hist[1].Type != "TERMINATING" || hist[1].Object.GetDeletionTimestamp() == nil {
		t.Fatalf("history after delete with finalizer: %+v %v", hist, err)
	}
}

func TestServerErrorsAreStatusErrors(t *testing.T) {
	_, url := unixServer(t)
	c := newClient(t, client.Config{Server: url})
	ctx := ctx(t)

	_, err := c.Create(ctx, agent("bad", map[string]any{"harness": "fake", "colour": "red"}), client.WriteOptions{})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("unknown field: want BadRequest naming the field, got %v", err)
	}
	_, err = c.Create(ctx, agent("bad", map[string]any{"harness": "vim"}), client.WriteOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.harness") {
		t.Fatalf("bad enum: want Invalid naming spec.harness, got %v", err)
	}
	if _, err := c.Create(ctx, agent("dup", map[string]any{"harness": "fake"}), client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Create(ctx, agent("dup", map[string]any{"harness": "fake"}), client.WriteOptions{})
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("want AlreadyExists, got %v", err)
	}
	// Dry run validates and defaults without storing.
	out, err := c.Create(ctx, agent("dry", map[string]any{"harness": "claude"}), client.WriteOptions{DryRun: true})
	if err != nil || out.GetName() != "dry" {
		t.Fatalf("dry-run create: %v %v", out, err)
	}
	if _, err := c.Get(ctx, "agents", "default", "dry"); !apierrors.IsNotFound(err) {
		t.Fatalf("dry-run object was stored: %v", err)
	}
}

func TestConnectionError(t *testing.T) {
	c := newClient(t, client.Config{Server: "unix://" + t.TempDir() + "/none.sock"})
	_, err := c.Get(ctx(t), "agents", "default", "x")
	if !client.IsConnectionError(err) {
		t.Fatalf("want ConnectionError, got %T %v", err, err)
	}
}

func TestNewRejectsBadServers(t *testing.T) {
	for _, s := range []string{"ftp://x", "unix://", "::", "http://10.0.0.1:80", "http://example.com"} {
		if _, err := client.New(client.Config{Server: s}); err == nil {
			t.Errorf("New(%q): want error", s)
		}
	}
	for _, s := range []string{"http://127.0.0.1:8080", "http://localhost:1", "http://[::1]:1", "https://example.com:7443"} {
		if _, err := client.New(client.Config{Server: s}); err != nil {
			t.Errorf("New(%q): %v", s, err)
		}
	}
	if _, err := client.New(client.Config{Server: "https://127.0.0.1:1", CAFile: t.TempDir() + "/missing.pem"}); err == nil {
		t.Error("missing CA file: want error")
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(client.EnvServer, "")
	t.Setenv(client.EnvToken, "")
	t.Setenv("HOME", "/home/someone")
	if got := client.FromEnv(); got.Server != "unix:///home/someone/.aicli/supervisor.sock" || got.Token != "" {
		t.Fatalf("defaults: %+v", got)
	}
	t.Setenv(client.EnvServer, "https://10.0.0.1:7443")
	t.Setenv(client.EnvToken, "tok")
	if got := client.FromEnv(); got.Server != "https://10.0.0.1:7443" || got.Token != "tok" {
		t.Fatalf("env: %+v", got)
	}
}

func TestTLSTokens(t *testing.T) {
	url, caFile := apiservertest.New(t).ServeTLS(t, map[string][]string{"team-a": {"a"}, "admin": {"*"}})
	ctx := ctx(t)

	// The self-signed certificate is refused without the CA.
	_, err := newClient(t, client.Config{Server: url, Token: "admin"}).Discovery(ctx)
	if err == nil || !client.IsConnectionError(err) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("unknown CA: want certificate error, got %v", err)
	}
	// InsecureSkipVerify accepts it.
	if _, err := newClient(t, client.Config{Server: url, Token: "admin", InsecureSkipVerify: true}).Discovery(ctx); err != nil {
		t.Fatalf("insecure: %v", err)
	}

	_, err = newClient(t, client.Config{Server: url, CAFile: caFile}).List(ctx, "agents", "a", client.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("no token: want 401, got %v", err)
	}
	_, err = newClient(t, client.Config{Server: url, CAFile: caFile, Token: "wrong"}).List(ctx, "agents", "a", client.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("bad token: want 401, got %v", err)
	}
	teamA := newClient(t, client.Config{Server: url, CAFile: caFile, Token: "team-a"})
	if _, err := teamA.List(ctx, "agents", "a", client.ListOptions{}); err != nil {
		t.Fatalf("own namespace: %v", err)
	}
	_, err = teamA.List(ctx, "agents", "b", client.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("other namespace: want 403, got %v", err)
	}
	if h := teamA.AuthHeader(); h.Get("Authorization") != "Bearer team-a" {
		t.Fatalf("AuthHeader over https: %v", h)
	}
	if h := newClient(t, client.Config{Server: "unix:///x.sock", Token: "t"}).AuthHeader(); len(h) != 0 {
		t.Fatalf("AuthHeader on a unix socket must be empty: %v", h)
	}
	disc, err := newClient(t, client.Config{Server: url, CAFile: caFile, Token: "admin"}).Discovery(ctx)
	if err != nil {
		t.Fatalf("Discovery: %v", err)
	}
	var names []string
	for _, r := range disc.APIResources {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, ","); got != "agents,agents/status,conversations,conversations/status,"+
		"grants,grants/status,monitorattachments,monitorattachments/status,namespacepolicies,toolclasses" {
		t.Fatalf("Discovery lists %s", got)
	}
}

func TestWatch(t *testing.T) {
	srv, url := unixServer(t)
	c := newClient(t, client.Config{Server: url})
	ctx := ctx(t)
	first, err := c.Create(ctx, agent("w1", map[string]any{"harness": "fake"}), client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Watch from the first object's version: it sees only later changes.
	w, err := c.Watch(ctx, "agents", "default", client.ListOptions{ResourceVersion: first.GetResourceVersion(), AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := c.Create(ctx, agent("w2", map[string]any{"harness": "fake"}), client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, "agents", "default", "w1"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 2 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed early after %v", got)
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			got = append(got, string(ev.Type)+" "+ev.Object.(*unstructured.Unstructured).GetName())
		case <-ctx.Done():
			t.Fatalf("timed out; got %v", got)
		}
	}
	if strings.Join(got, ",") != "ADDED w2,DELETED w1" {
		t.Fatalf("events = %v", got)
	}
	w.Stop()
	for range w.ResultChan() { //nolint:revive // drain until closed
	}

	// A version older than the compacted watch log is refused with 410 Gone
	// before the stream starts (a watcher that falls behind mid-stream gets
	// an ERROR event instead; see TestWatchErrorEvent).
	srv.Compact(t)
	_, err = c.Watch(ctx, "agents", "default", client.ListOptions{ResourceVersion: "1"})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("watch from a compacted version: want 410 Gone, got %v", err)
	}
}

// TestWatchErrorEvent decodes an ERROR line (what the server streams to a
// watcher that fell behind) into a *metav1.Status that converts to 410 Gone.
func TestWatchErrorEvent(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",`+
			`"message":"watcher fell behind, re-watch from 7","reason":"Expired","code":410}}`+"\n")
	}))
	t.Cleanup(hs.Close)
	w, err := newClient(t, client.Config{Server: hs.URL}).Watch(ctx(t), "agents", "default", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := <-w.ResultChan()
	st, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok || st.Code != 410 {
		t.Fatalf("want ERROR 410, got %v %#v", ev.Type, ev.Object)
	}
	if !apierrors.IsResourceExpired(apierrors.FromObject(st)) {
		t.Fatalf("status does not convert to Expired: %#v", st)
	}
	if _, open := <-w.ResultChan(); open {
		t.Fatal("the stream did not end after the server closed it")
	}
}
