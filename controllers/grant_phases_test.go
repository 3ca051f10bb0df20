package controllers

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/authority"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/storeclient"
)

// heldLeases is a lease view the test sets.
type heldLeases map[string][]authority.LeaseInfo

func (h heldLeases) Hold(context.Context, authority.Lease) error { return nil }
func (h heldLeases) Release(string)                              {}
func (h heldLeases) Held(ns, grant string) []authority.LeaseInfo { return h[ns+"/"+grant] }

type grantEnv struct {
	t      *testing.T
	h      *harness
	r      *GrantReconciler
	leases heldLeases
}

func newGrantEnv(t *testing.T) *grantEnv {
	t.Helper()
	dir := layout.Dir(t.TempDir())
	st, err := store.Open(dir.Store(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &grantEnv{t: t, h: &harness{t: t, store: st, client: storeclient.New(st), dir: dir}, leases: heldLeases{}}
	e.r = &GrantReconciler{Client: e.h.client, Leases: e.leases,
		Now: func() metav1.Time { return metav1.NewTime(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)) }}
	e.h.create("toolclasses", echoClass)
	return e
}

func (e *grantEnv) reconcile(name string) {
	e.t.Helper()
	reconcileOnce(e.t, e.r, name)
}

func (e *grantEnv) grant(name string) *v1alpha1.Grant {
	g := &v1alpha1.Grant{}
	if err := e.h.client.Get(context.Background(), "default", name, g); err != nil {
		e.t.Fatal(err)
	}
	return g
}

func (e *grantEnv) want(name, typ string, status metav1.ConditionStatus, reason, msg string) {
	e.t.Helper()
	wantCondition(e.t, e.grant(name).Status.Conditions, name, typ, status, reason, msg)
}

func TestGrantReferencesAndReady(t *testing.T) {
	e := newGrantEnv(t)
	e.h.create("grants", greetGrant("g1", "greet"))
	e.reconcile("g1")
	e.want("g1", v1alpha1.ConditionReferencesResolved, metav1.ConditionFalse, v1alpha1.ReasonAgentNotFound, `agent "a" does not exist`)
	e.want("g1", v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonAgentNotFound, "spec.subject")
	e.want("g1", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAgentNotFound, "")

	e.h.create("agents", fakeAgentJSON)
	e.reconcile("g1")
	e.want("g1", v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
	e.want("g1", v1alpha1.ConditionToolsReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "1 tools granted")
	e.want("g1", v1alpha1.ConditionLeaseHeld, metav1.ConditionFalse, v1alpha1.ReasonNoLiveConversation, "no live conversation")
	if g := e.grant("g1"); g.Status.ObservedGeneration != g.Generation || meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionStalled) != nil {
		t.Fatalf("status %+v", g.Status)
	}
}

func TestGrantToolConflictKeepsTheOlder(t *testing.T) {
	e := newGrantEnv(t)
	e.h.create("agents", fakeAgentJSON)
	e.h.create("grants", greetGrant("old", "greet"))
	time.Sleep(1100 * time.Millisecond) // creation timestamps have second resolution
	e.h.create("grants", greetGrant("young", "greet"))
	e.reconcile("old")
	e.reconcile("young")
	e.want("old", v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
	e.want("young", v1alpha1.ConditionToolsReady, metav1.ConditionFalse, v1alpha1.ReasonToolConflict, "greet (held by grant old)")
}

func TestGrantLeasesAndRevocation(t *testing.T) {
	e := newGrantEnv(t)
	e.h.create("agents", fakeAgentJSON)
	e.h.create("grants", greetGrant("g1", "greet"))
	issued := time.Date(2026, 12, 4, 11, 59, 0, 0, time.UTC)
	e.leases["default/g1"] = []authority.LeaseInfo{{Conversation: "c", UID: "u", IssuedAt: issued, ExpiresAt: issued.Add(time.Minute)}}
	e.reconcile("g1")
	e.want("g1", v1alpha1.ConditionLeaseHeld, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "1 live conversations")
	g := e.grant("g1")
	if len(g.Status.Conversations) != 1 || g.Status.Conversations[0].Name != "c" || !g.Status.IssuedAt.Time.Equal(issued) {
		t.Fatalf("status %+v", g.Status)
	}
	// A renewal alone writes nothing.
	rv := g.ResourceVersion
	e.leases["default/g1"] = []authority.LeaseInfo{{Conversation: "c", UID: "u", IssuedAt: issued, ExpiresAt: issued.Add(3 * time.Minute)}}
	e.reconcile("g1")
	if got := e.grant("g1"); got.ResourceVersion != rv {
		t.Fatalf("a renewal wrote the status: %+v", got.Status)
	}
	// The lease is lost: the grant says so and when.
	delete(e.leases, "default/g1")
	e.reconcile("g1")
	e.want("g1", v1alpha1.ConditionLeaseHeld, metav1.ConditionFalse, v1alpha1.ReasonNoLiveConversation, "")
	if g := e.grant("g1"); len(g.Status.Conversations) != 0 || g.Status.LeaseExpiresAt == nil {
		t.Fatalf("status %+v", g.Status)
	}
	// An edit revokes what was issued for the older generation.
	g = e.grant("g1")
	g.Spec.Tools[0].Usage = "changed"
	if err := e.h.client.Update(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	e.reconcile("g1")
	if g := e.grant("g1"); g.Status.RevokedAt == nil || g.Status.ObservedGeneration != g.Generation {
		t.Fatalf("status %+v", g.Status)
	}
}

func TestGrantDelegationWiderThanParentIsRevoked(t *testing.T) {
	e := newGrantEnv(t)
	e.h.create("agents", fakeAgentJSON)
	e.h.create("agents", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"b"},"spec":{"harness":"fake"}}`)
	e.h.create("grants", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"p"},"spec":{"subject":"a","tools":[`+
		`{"name":"greet","className":"echo","attenuation":{"maxCallsPerHour":5}}]}}`)
	e.h.create("grants", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"d"},"spec":{"subject":"b","delegation":{"parent":"p","by":"a"},"tools":[`+
		`{"name":"greet","className":"echo","attenuation":{"maxCallsPerHour":50}}]}}`)
	e.reconcile("d")
	e.want("d", v1alpha1.ConditionReferencesResolved, metav1.ConditionFalse, v1alpha1.ReasonParentRevoked, "maxCallsPerHour 50 exceeds the parent's 5")
}

// TestGrantWithoutAResolvableClassIsStalled: a grant stored before ToolClasses
// with its own backend, or naming a class that is missing or does not admit
// its namespace, is Stalled with a reason saying which and what to do.
func TestGrantWithoutAResolvableClassIsStalled(t *testing.T) {
	e := newGrantEnv(t)
	e.h.create("agents", fakeAgentJSON)
	e.h.create("grants", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"legacy"},"spec":{"subject":"a","tools":[`+
		`{"name":"sh","backend":{"exec":{"command":"/bin/sh"}}}]}}`)
	e.reconcile("legacy")
	e.want("legacy", v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonInlineBackend, "kind: ToolClass, metadata.name: sh")
	e.want("legacy", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonInlineBackend, "")

	e.h.create("grants", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"nocls"},"spec":{"subject":"a","tools":[`+
		`{"name":"gh","className":"gh"}]}}`)
	e.reconcile("nocls")
	e.want("nocls", v1alpha1.ConditionToolsReady, metav1.ConditionFalse, v1alpha1.ReasonClassNotFound, `ToolClass "gh" does not exist`)

	e.h.create("toolclasses", `{"apiVersion":"aicli.dev/v1alpha1","kind":"ToolClass","metadata":{"name":"gh"},`+
		`"spec":{"namespaces":["team-b"],"backend":{"exec":{"command":"/usr/bin/gh"}}}}`)
	e.reconcile("nocls")
	e.want("nocls", v1alpha1.ConditionToolsReady, metav1.ConditionFalse, v1alpha1.ReasonClassNotAllowed, `does not admit namespace "default"`)
}
