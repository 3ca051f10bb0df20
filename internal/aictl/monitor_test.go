package aictl

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/monitor/breaker"
	"aicli.dev/aicli/internal/monitor/monitorapi"
	"aicli.dev/aicli/internal/monitor/monitorwire"
	"aicli.dev/aicli/internal/storeclient"
)

// monitorServer serves the API with the monitor endpoints and a target agent "coder".
func monitorServer(t *testing.T) (string, *storeclient.Client) {
	t.Helper()
	srv := apiservertest.New(t)
	monitorapi.Mount(srv.API, srv.Store)
	url := srv.ServeUnix(t)
	c := storeclient.New(srv.Store)
	coder := &v1alpha1.Agent{Spec: v1alpha1.AgentSpec{Harness: "codex"}}
	coder.Namespace, coder.Name = "default", "coder"
	if err := c.Create(context.Background(), coder); err != nil {
		t.Fatal(err)
	}
	return url, c
}

func TestMonitorCreateAndRearm(t *testing.T) {
	url, c := monitorServer(t)
	ctx := context.Background()

	wantCode(t, aictl(t, url, "monitor", "create", "watchdog", "--target", "coder", "--keywords", "panic, deadlock", "--word",
		"--max-humanless", "3"), 0)
	agent := &v1alpha1.Agent{}
	att := &v1alpha1.MonitorAttachment{}
	if err := c.Get(ctx, "default", "watchdog", agent); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, "default", "watchdog", att); err != nil {
		t.Fatal(err)
	}
	if agent.Spec.Harness != "codex" || agent.Spec.Persona != monitorwire.AdvisorPersona {
		t.Fatalf("monitor agent: %+v", agent.Spec)
	}
	if s := att.Spec; s.Monitor != "watchdog" || s.Target.Agent != "coder" || s.Mode != v1alpha1.MonitorAdvise ||
		len(s.Trigger.Keywords) != 2 || s.Trigger.Keywords[1] != (v1alpha1.Keyword{Text: "deadlock", Mode: v1alpha1.MatchWord}) ||
		s.Breaker.MaxConsecutiveHumanless != 3 {
		t.Fatalf("attachment: %+v", s)
	}
	r := aictl(t, url, "monitor", "create", "watchdog", "--target", "coder", "--keywords", "x")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "already exists") {
		t.Fatalf("second create: %s", r.err)
	}
	wantCode(t, aictl(t, url, "monitor", "create", "w2", "--target", "coder", "--keywords", "a,,b"), 1)
	wantCode(t, aictl(t, url, "monitor", "create", "w3", "--target", "coder", "--keywords", "a", "--watch-only", "--harness", "claude"), 0)
	if err := c.Get(ctx, "default", "w3", att); err != nil || att.Spec.Mode != v1alpha1.MonitorWatchOnly {
		t.Fatalf("watch-only: %v %+v", err, att.Spec)
	}

	r = aictl(t, url, "monitor", "rearm", "watchdog")
	wantCode(t, r, 0)
	if !strings.Contains(r.out, "was not tripped") {
		t.Fatalf("rearm of a closed breaker: %s", r.out)
	}
	if err := c.Get(ctx, "default", "watchdog", att); err != nil {
		t.Fatal(err)
	}
	breaker.MarkClosed(att, time.Now())
	for range 3 {
		breaker.Wake(att, time.Now())
		breaker.Inject(att, time.Now())
	}
	if breaker.Closed(&att.Status) {
		t.Fatal("not tripped")
	}
	if err := c.UpdateStatus(ctx, att); err != nil {
		t.Fatal(err)
	}
	r = aictl(t, url, "monitor", "rearm", "watchdog")
	wantCode(t, r, 0)
	if !strings.Contains(r.out, "monitorattachment/watchdog re-armed") {
		t.Fatalf("rearm: %s", r.out)
	}
	if err := c.Get(ctx, "default", "watchdog", att); err != nil || !breaker.Closed(&att.Status) || att.Status.ConsecutiveHumanless != 0 {
		t.Fatalf("after rearm: %v %+v", err, att.Status)
	}
	wantCode(t, aictl(t, url, "monitor", "rearm", "nope"), 1)
}

// TestMonitorCreateRefusesBadKeywordsBeforeCreatingAnything: blank keywords are
// usage errors naming --keywords; what only the server judges (a duplicate) is
// refused naming the field, and neither refusal leaves an agent behind.
func TestMonitorCreateRefusesBadKeywordsBeforeCreatingAnything(t *testing.T) {
	url, c := monitorServer(t)
	ctx := context.Background()
	for _, tc := range []struct{ keywords, want string }{
		{"", "--keywords K1,K2 is required"},
		{" ,panic", "--keywords: an empty keyword"},
		{"panic,  ", "--keywords: an empty keyword"},
		{"panic,PANIC", "spec.trigger.keywords[1]: Duplicate value"},
	} {
		r := aictl(t, url, "monitor", "create", "w", "--target", "coder", "--keywords", tc.keywords)
		wantCode(t, r, 1)
		if !strings.Contains(r.err, tc.want) {
			t.Fatalf("--keywords %q: stderr %q, want %q", tc.keywords, r.err, tc.want)
		}
		if err := c.Get(ctx, "default", "w", &v1alpha1.Agent{}); !apierrors.IsNotFound(err) {
			t.Fatalf("--keywords %q left agent w behind (get: %v)", tc.keywords, err)
		}
	}
}
