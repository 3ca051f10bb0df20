package controllers

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/storeclient"
)

type harness struct {
	t      *testing.T
	store  *store.Store
	client *storeclient.Client
	dir    layout.Dir
}

func startControllers(t *testing.T) *harness {
	t.Helper()
	dir := layout.Dir(t.TempDir())
	st, err := store.Open(dir.Store(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); st.Close() })
	err = Start(ctx, Options{Store: st, DataDir: dir, SupervisorID: "sup-test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SkipNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, store: st, client: storeclient.New(st), dir: dir}
}

func (h *harness) create(resource, body string) {
	h.t.Helper()
	res, _ := apischema.Default().Lookup(resource)
	obj, err := apischema.Default().Decode(res, "default", []byte(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.store.Create(context.Background(), resource, obj); err != nil {
		h.t.Fatal(err)
	}
}

// eventually polls cond until it holds or 10 s pass.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) agent(name string) *v1alpha1.Agent {
	a := &v1alpha1.Agent{}
	if err := h.client.Get(context.Background(), "default", name, a); err != nil {
		return nil
	}
	return a
}

// reconcileOnce runs one reconcile of default/name and fails the test on an error.
func reconcileOnce(t *testing.T, r reconcile.Reconciler, name string) {
	t.Helper()
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// wantCondition fails the test unless conds hold typ with status and reason, its message containing msg.
func wantCondition(t *testing.T, conds []metav1.Condition, name, typ string, status metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	c := meta.FindStatusCondition(conds, typ)
	if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, msg) {
		t.Fatalf("%s %s = %+v, want %s/%s containing %q", name, typ, c, status, reason, msg)
	}
}

func readyCurrent(conds []metav1.Condition, gen int64) *metav1.Condition {
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	if c == nil || c.ObservedGeneration != gen {
		return nil
	}
	return c
}

func TestAgentBecomesReadyWithDurableHome(t *testing.T) {
	h := startControllers(t)
	h.create("agents", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake"}}`)
	var a *v1alpha1.Agent
	h.eventually("agent Ready", func() bool {
		a = h.agent("a")
		c := readyCurrent(a.Status.Conditions, a.Generation)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	if a.Status.ObservedGeneration != a.Generation || a.Generation != 1 {
		t.Fatalf("generation %d observed %d", a.Generation, a.Status.ObservedGeneration)
	}
	if a.Status.HomeSupervisor != "sup-test" {
		t.Errorf("homeSupervisor %q", a.Status.HomeSupervisor)
	}
	for _, dir := range []string{h.dir.AgentHome("default", "a"), h.dir.AgentWorkspace("default", "a")} {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", dir, fi, err)
		}
	}
	if a.Status.HomePath != h.dir.AgentHome("default", "a") {
		t.Errorf("homePath %q", a.Status.HomePath)
	}
	// A settled agent is not rewritten: the controller skips no-op status writes.
	rv := h.store.CurrentRV()
	time.Sleep(300 * time.Millisecond)
	if h.store.CurrentRV() != rv {
		t.Fatalf("controller keeps writing a settled agent: rv %d → %d", rv, h.store.CurrentRV())
	}
}

func TestAgentWithMissingPeerIsNotReadyUntilPeerExists(t *testing.T) {
	h := startControllers(t)
	h.create("agents", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake","peers":{"sendTo":{"agents":["b"]}}}}`)
	h.eventually("PeerNotFound", func() bool {
		a := h.agent("a")
		c := readyCurrent(a.Status.Conditions, a.Generation)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonPeerNotFound
	})
	h.create("agents", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"b"},"spec":{"harness":"fake"}}`)
	h.eventually("Ready once the peer exists", func() bool {
		a := h.agent("a")
		c := readyCurrent(a.Status.Conditions, a.Generation)
		return c != nil && c.Status == metav1.ConditionTrue
	})
}

func TestReadyTracksGeneration(t *testing.T) {
	h := startControllers(t)
	h.create("agents", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake"}}`)
	h.eventually("Ready", func() bool { a := h.agent("a"); return readyCurrent(a.Status.Conditions, a.Generation) != nil })
	a := h.agent("a")
	a.Spec.Model = "m2"
	if err := h.client.Update(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if a.Generation != 2 {
		t.Fatalf("generation %d after spec change", a.Generation)
	}
	h.eventually("Ready at generation 2", func() bool {
		a := h.agent("a")
		return a.Status.ObservedGeneration == 2 && readyCurrent(a.Status.Conditions, 2) != nil
	})
}

func TestAgentDeletionReleasesFinalizerAndKeepsHome(t *testing.T) {
	h := startControllers(t)
	h.create("agents", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake"}}`)
	h.eventually("finalizer", func() bool { a := h.agent("a"); return a != nil && len(a.Finalizers) == 1 })
	home := h.dir.AgentHome("default", "a")
	// The finalizer is written before the home is made: wait for the home too.
	h.eventually("home", func() bool { _, err := os.Stat(home); return err == nil })
	if err := os.WriteFile(filepath.Join(home, "note"), []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Delete(context.Background(), "agents", "default", "a", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("agent gone", func() bool { return h.agent("a") == nil })
	if _, err := os.Stat(filepath.Join(home, "note")); err != nil {
		t.Fatalf("durable home lost on delete: %v", err)
	}
}

func TestPendingKindsReportNotImplementedHonestly(t *testing.T) {
	h := startControllers(t)
	h.create("conversations", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Conversation","metadata":{"name":"c"},"spec":{"agentRef":"ghost"}}`)
	for _, res := range []string{"conversations"} {
		name := map[string]string{"conversations": "c"}[res]
		h.eventually(res+" conditions", func() bool {
			obj, err := h.store.Get(context.Background(), res, "default", name)
			if err != nil {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			var ready, refs map[string]any
			for _, c := range conds {
				m := c.(map[string]any)
				switch m["type"] {
				case v1alpha1.ConditionReady:
					ready = m
				case v1alpha1.ConditionReferencesResolved:
					refs = m
				}
			}
			return ready != nil && ready["status"] == "False" && ready["reason"] == v1alpha1.ReasonNotImplemented &&
				refs != nil && refs["reason"] == v1alpha1.ReasonAgentNotFound
		})
	}
}
