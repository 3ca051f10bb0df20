package controllers

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/storeclient"
)

// TestAgentPhases drives AgentReconciler.Reconcile once per case against a
// real store: one row per way each phase can end.
func TestAgentPhases(t *testing.T) {
	for _, tc := range []struct {
		name  string
		agent string
		// breakHome makes the agents' directory a file, so the home cannot be created.
		breakHome bool
		peers     []string
		wantErr   bool
		want      map[string][3]string // condition type → status, reason, message substring
		absent    []string
	}{
		{name: "ready", agent: fakeAgentJSON, want: map[string][3]string{
			v1alpha1.ConditionReferencesResolved: {"True", v1alpha1.ReasonSucceeded, ""},
			v1alpha1.ConditionHomeReady:          {"True", v1alpha1.ReasonSucceeded, ""},
			v1alpha1.ConditionReady:              {"True", v1alpha1.ReasonSucceeded, ""},
		}, absent: []string{v1alpha1.ConditionStalled, v1alpha1.ConditionReconciling}},
		{name: "missing peer stalls, home still made",
			agent: `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake","peers":{"sendTo":{"agents":["b","ghost"]}}}}`,
			peers: []string{"b"},
			want: map[string][3]string{
				v1alpha1.ConditionReferencesResolved: {"False", v1alpha1.ReasonPeerNotFound, "[ghost]"},
				v1alpha1.ConditionStalled:            {"True", v1alpha1.ReasonPeerNotFound, "spec.peers"},
				v1alpha1.ConditionHomeReady:          {"True", v1alpha1.ReasonSucceeded, ""},
				v1alpha1.ConditionReady:              {"False", v1alpha1.ReasonPeerNotFound, "ghost"},
			}, absent: []string{v1alpha1.ConditionReconciling}},
		{name: "home unavailable is retried and reported", agent: fakeAgentJSON, breakHome: true, wantErr: true,
			want: map[string][3]string{
				v1alpha1.ConditionHomeReady:   {"False", v1alpha1.ReasonHomeUnavailable, "not a directory"},
				v1alpha1.ConditionReconciling: {"True", v1alpha1.ReasonHomeUnavailable, "not a directory"},
				v1alpha1.ConditionReady:       {"False", v1alpha1.ReasonHomeUnavailable, "not a directory"},
			}, absent: []string{v1alpha1.ConditionStalled}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := layout.Dir(t.TempDir())
			st, err := store.Open(dir.Store(), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			h := &harness{t: t, store: st, client: storeclient.New(st), dir: dir}
			if tc.breakHome {
				agents := filepath.Dir(filepath.Dir(dir.AgentHome("default", "a")))
				if err := os.MkdirAll(filepath.Dir(agents), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(agents, []byte("not a dir"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range tc.peers {
				h.create("agents", strings.Replace(fakeAgentJSON, `"name":"a"`, `"name":"`+p+`"`, 1))
			}
			h.create("agents", tc.agent)
			r := &AgentReconciler{Client: h.client, DataDir: dir, SupervisorID: "sup-test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			_, err = r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "a"}})
			if (err != nil) != tc.wantErr {
				t.Fatalf("Reconcile error = %v, want error %v", err, tc.wantErr)
			}
			a := h.agent("a")
			for typ, w := range tc.want {
				c := meta.FindStatusCondition(a.Status.Conditions, typ)
				if c == nil || string(c.Status) != w[0] || c.Reason != w[1] || !strings.Contains(c.Message, w[2]) {
					t.Errorf("%s = %+v, want %v", typ, c, w)
				}
				if c != nil && c.ObservedGeneration != a.Generation {
					t.Errorf("%s stamped with generation %d, want %d", typ, c.ObservedGeneration, a.Generation)
				}
			}
			for _, typ := range tc.absent {
				if c := meta.FindStatusCondition(a.Status.Conditions, typ); c != nil {
					t.Errorf("%s present: %+v", typ, c)
				}
			}
			if a.Status.ObservedGeneration != a.Generation || a.Status.HomeSupervisor != "sup-test" {
				t.Errorf("status: %+v", a.Status)
			}
		})
	}
}
