package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/monitor/breaker"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/storeclient"
)

type monitorEnv struct {
	t *testing.T
	h *harness
	r *MonitorAttachmentReconciler
}

func newMonitorEnv(t *testing.T) *monitorEnv {
	t.Helper()
	dir := layout.Dir(t.TempDir())
	st, err := store.Open(dir.Store(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{t: t, store: st, client: storeclient.New(st), dir: dir}
	return &monitorEnv{t: t, h: h, r: &MonitorAttachmentReconciler{Client: h.client,
		Now: func() time.Time { return time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC) }}}
}

func (e *monitorEnv) reconcile(name string) {
	e.t.Helper()
	reconcileOnce(e.t, e.r, name)
}

func (e *monitorEnv) get(name string) *v1alpha1.MonitorAttachment {
	a := &v1alpha1.MonitorAttachment{}
	if err := e.h.client.Get(context.Background(), "default", name, a); err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *monitorEnv) want(name, typ string, status metav1.ConditionStatus, reason, msg string) {
	e.t.Helper()
	wantCondition(e.t, e.get(name).Status.Conditions, name, typ, status, reason, msg)
}

func agentJSON(name string) string {
	return fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":%q},"spec":{"harness":"fake"}}`, name)
}

func attachmentJSON(name, monitor, target, conv, keywords string) string {
	convField := ""
	if conv != "" {
		convField = fmt.Sprintf(`,"conversation":%q`, conv)
	}
	return fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"MonitorAttachment","metadata":{"name":%q},`+
		`"spec":{"monitor":%q,"target":{"agent":%q%s},"trigger":{"keywords":%s}}}`, name, monitor, target, convField, keywords)
}

func TestMonitorAttachmentReferences(t *testing.T) {
	e := newMonitorEnv(t)
	e.h.create("monitorattachments", attachmentJSON("m", "watcher", "worker", "", `[{"text":"panic"}]`))
	e.reconcile("m")
	e.want("m", v1alpha1.ConditionReferencesResolved, metav1.ConditionFalse, v1alpha1.ReasonAgentNotFound, `spec.monitor: agent "watcher"`)
	e.want("m", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAgentNotFound, "")
	e.want("m", v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonAgentNotFound, "")

	e.h.create("agents", agentJSON("watcher"))
	e.reconcile("m")
	e.want("m", v1alpha1.ConditionReferencesResolved, metav1.ConditionFalse, v1alpha1.ReasonTargetNotFound, `spec.target.agent: agent "worker"`)

	e.h.create("agents", agentJSON("worker"))
	e.h.create("conversations", convJSON("w1", "worker"))
	e.h.create("conversations", convJSON("w2", "worker"))
	e.h.create("conversations", convJSON("other", "watcher"))
	e.reconcile("m")
	e.want("m", v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
	e.want("m", v1alpha1.ConditionBreakerClosed, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
	if c := e.get("m").Status.Conversations; len(c) != 2 || c[0].Target != "w1" || c[1].Target != "w2" {
		t.Fatalf("conversations = %+v", c)
	}

	// One conversation only; a missing one is named.
	e.h.create("monitorattachments", attachmentJSON("one", "watcher", "worker", "nope", `[{"text":"panic"}]`))
	e.reconcile("one")
	e.want("one", v1alpha1.ConditionReferencesResolved, metav1.ConditionFalse, v1alpha1.ReasonTargetNotFound, `spec.target.conversation: conversation "nope"`)

	// Without a way to reach other supervisors a remote target is not served.
	e.h.create("monitorattachments", `{"apiVersion":"aicli.dev/v1alpha1","kind":"MonitorAttachment","metadata":{"name":"remote"},`+
		`"spec":{"monitor":"watcher","target":{"agent":"worker","supervisor":{"address":"https://x:1","tokenSecret":"t"}},"trigger":{"keywords":[{"text":"panic"}]}}}`)
	e.reconcile("remote")
	e.want("remote", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNotImplemented, "serves no remote targets")
}

func TestMonitorAttachmentTriggerCompiledPerGeneration(t *testing.T) {
	e := newMonitorEnv(t)
	e.h.create("agents", agentJSON("watcher"))
	e.h.create("agents", agentJSON("worker"))
	e.h.create("monitorattachments", attachmentJSON("m", "watcher", "worker", "", `[{"text":"panic"},{"text":"  "}]`))
	e.reconcile("m")
	e.want("m", v1alpha1.ConditionTriggerReady, metav1.ConditionFalse, v1alpha1.ReasonInvalidSpec, "spec.trigger.keywords[1].text")
	e.want("m", v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonInvalidSpec, "spec.trigger.keywords[1].text")

	a := e.get("m")
	a.Spec.Trigger.Keywords = a.Spec.Trigger.Keywords[:1]
	if err := e.h.client.Update(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	e.reconcile("m")
	e.want("m", v1alpha1.ConditionTriggerReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "1 keyword(s)")
	if got := e.get("m"); got.Status.ObservedGeneration != got.Generation || meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStalled) != nil {
		t.Fatalf("status = %+v", got.Status)
	}
}

func TestMonitorAttachmentTrippedBreakerStaysOpenUntilRearmed(t *testing.T) {
	e := newMonitorEnv(t)
	e.h.create("agents", agentJSON("watcher"))
	e.h.create("agents", agentJSON("worker"))
	e.h.create("monitorattachments", attachmentJSON("m", "watcher", "worker", "", `[{"text":"panic"}]`))
	e.reconcile("m")
	a := e.get("m")
	now := time.Now()
	a.Spec.Breaker.MaxConsecutiveHumanless = 1
	breaker.Wake(a, now)
	if !breaker.Inject(a, now) {
		t.Fatal("no trip")
	}
	if err := e.h.client.UpdateStatus(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e.reconcile("m")
		e.want("m", v1alpha1.ConditionBreakerClosed, metav1.ConditionFalse, v1alpha1.ReasonHumanlessCycles, "aictl monitor rearm m")
		e.want("m", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonHumanlessCycles, "")
	}
	a = e.get("m")
	breaker.Rearm(a, now)
	if err := e.h.client.UpdateStatus(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	e.reconcile("m")
	e.want("m", v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
	e.want("m", v1alpha1.ConditionBreakerClosed, metav1.ConditionTrue, v1alpha1.ReasonRearmed, "")
}

func TestMonitorAttachmentArchivesMonitorConversationOfArchivedTarget(t *testing.T) {
	e := newMonitorEnv(t)
	e.h.create("agents", agentJSON("watcher"))
	e.h.create("agents", agentJSON("worker"))
	e.h.create("conversations", convJSON("w1", "worker"))
	e.h.create("conversations", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Conversation","metadata":{"name":"mon1","labels":{"aicli.dev/monitor-attachment":"m"}},"spec":{"agentRef":"watcher","desiredState":"Paused"}}`)
	e.h.create("monitorattachments", attachmentJSON("m", "watcher", "worker", "", `[{"text":"panic"}]`))
	e.reconcile("m")
	a := e.get("m")
	a.Status.Conversations[0].Monitor = "mon1"
	if err := e.h.client.UpdateStatus(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	w1 := &v1alpha1.Conversation{}
	if err := e.h.client.Get(context.Background(), "default", "w1", w1); err != nil {
		t.Fatal(err)
	}
	w1.Spec.DesiredState = v1alpha1.ConversationArchived
	if err := e.h.client.Update(context.Background(), w1); err != nil {
		t.Fatal(err)
	}
	e.reconcile("m")
	mon := &v1alpha1.Conversation{}
	if err := e.h.client.Get(context.Background(), "default", "mon1", mon); err != nil {
		t.Fatal(err)
	}
	if mon.Spec.DesiredState != v1alpha1.ConversationArchived {
		t.Fatalf("monitor conversation is %s", mon.Spec.DesiredState)
	}
}
