package client_test

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/monitor/monitorapi"
	"aicli.dev/aicli/internal/monitor/monitorwire"
)

func TestCreateMonitorAndRearm(t *testing.T) {
	srv := apiservertest.New(t)
	monitorapi.Mount(srv.API, srv.Store)
	c := newClient(t, client.Config{Server: srv.ServeUnix(t)})
	ctx := ctx(t)
	if _, err := c.Create(ctx, agent("coder", map[string]any{"harness": "codex"}), client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}

	// A trigger the server refuses leaves nothing behind.
	_, err := c.CreateMonitor(ctx, "default", client.MonitorRequest{Name: "w", Target: "coder", Keywords: []string{"panic", "PANIC"}})
	var me *client.MonitorError
	if !errors.As(err, &me) || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "checking monitorattachment w") {
		t.Fatalf("duplicate keyword: %v", err)
	}
	if _, err := c.Get(ctx, "agents", "default", "w"); !apierrors.IsNotFound(err) {
		t.Fatalf("agent w left behind: %v", err)
	}
	if _, err := c.CreateMonitor(ctx, "default", client.MonitorRequest{Name: "w", Target: "coder", Keywords: []string{" "}}); err == nil ||
		!strings.Contains(err.Error(), "empty keyword") {
		t.Fatalf("blank keyword: %v", err)
	}

	created, err := c.CreateMonitor(ctx, "default", client.MonitorRequest{Name: "watchdog", Target: "coder",
		Keywords: []string{"panic"}, Match: v1alpha1.MatchWord, WatchOnly: true,
		Breaker: v1alpha1.BreakerSpec{MaxConsecutiveHumanless: 3}})
	if err != nil || strings.Join(created, " ") != "agent/watchdog monitorattachment/watchdog" {
		t.Fatalf("create: %v %v", created, err)
	}
	a, err := c.Get(ctx, "agents", "default", "watchdog")
	if err != nil {
		t.Fatal(err)
	}
	if h, _, _ := unstructured.NestedString(a.Object, "spec", "harness"); h != "codex" {
		t.Fatalf("monitor harness %q, want the target's", h)
	}
	if p, _, _ := unstructured.NestedString(a.Object, "spec", "persona"); p != monitorwire.AdvisorPersona {
		t.Fatal("monitor persona is not the advisor's")
	}
	att, err := c.Get(ctx, "monitorattachments", "default", "watchdog")
	if err != nil {
		t.Fatal(err)
	}
	if m, _, _ := unstructured.NestedString(att.Object, "spec", "mode"); m != string(v1alpha1.MonitorWatchOnly) {
		t.Fatalf("mode %q", m)
	}

	// A name taken by an agent: nothing is created, the error says so.
	created, err = c.CreateMonitor(ctx, "default", client.MonitorRequest{Name: "coder", Target: "coder", Keywords: []string{"x"}})
	if !apierrors.IsAlreadyExists(err) || len(created) != 0 || !strings.Contains(err.Error(), `agent "coder" already exists`) {
		t.Fatalf("taken name: %v %v", created, err)
	}

	got, tripped, err := c.RearmMonitor(ctx, "default", "watchdog")
	if err != nil || tripped || got.Name != "watchdog" {
		t.Fatalf("rearm of a closed breaker: %v %v %v", got, tripped, err)
	}
	if _, _, err := c.RearmMonitor(ctx, "default", "nope"); !apierrors.IsNotFound(err) {
		t.Fatalf("rearm of a missing attachment: %v", err)
	}
}
