package controllers

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/authority"
	"aicli.dev/aicli/internal/capability"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/toolmount"
)

// holdingPTY is a scripted PTY that also holds capabilities, as the real guest does.
type holdingPTY struct {
	*scriptedPTY
	pushes []ptyapi.Capabilities
}

func (p *holdingPTY) SetCapabilities(_ context.Context, caps ptyapi.Capabilities) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pushes = append(p.pushes, caps)
	return nil
}

// echoClass is the ToolClass every greetGrant's tool names.
const echoClass = `{"apiVersion":"aicli.dev/v1alpha1","kind":"ToolClass","metadata":{"name":"echo"},` +
	`"spec":{"backend":{"exec":{"command":"/bin/echo"}}}}`

func greetGrant(name, tool string) string {
	return `{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"` + name + `"},"spec":{"subject":"a","tools":[` +
		`{"name":"` + tool + `","usage":"` + tool + ` NAME — greets NAME","className":"echo"}]}}`
}

func withTools(t *testing.T, e *phaseEnv) (*holdingPTY, *authority.Manager) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "aicli-tool")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	keys, err := capability.OpenKeyring(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pty := &holdingPTY{scriptedPTY: e.guests.pty}
	e.guests.holder = pty
	m := &authority.Manager{Keys: keys, TTL: time.Minute}
	t.Cleanup(m.Close)
	e.r.ToolBinary, e.r.Leases = bin, m
	e.h.create("toolclasses", echoClass)
	return pty, m
}

func TestPhaseTools(t *testing.T) {
	e := newPhaseEnv(t, nil)
	pty, leases := withTools(t, e)
	e.guests.pty.status = ptyapi.StatusInfo{} // no CLI yet: the phase starts it
	e.h.create("agents", fakeAgentJSON)
	e.h.create("grants", greetGrant("g1", "greet"))
	e.h.create("conversations", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Conversation","metadata":{"name":"c"},"spec":{"agentRef":"a","desiredState":"Active"}}`)
	if _, err := e.settle(); err != nil {
		t.Fatal(err)
	}
	e.want(v1alpha1.ConditionToolsReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "1 tools mounted at /opt/aicli/bin: greet")
	e.want(v1alpha1.ConditionLeaseHeld, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "1 tools")
	uid := string(e.conv().UID)

	// The tools directory holds exactly the granted names and is mounted read-only.
	names, _ := toolmount.Dirs{Root: e.h.dir.Tools()}.List(uid)
	if !slices.Equal(names, []string{"greet"}) {
		t.Fatalf("tools dir holds %v", names)
	}
	specs := e.rt.Specs()
	if !slices.ContainsFunc(specs[len(specs)-1].Mounts, func(m runtime.Mount) bool {
		return m.ContainerPath == toolmount.MountPath && m.ReadOnly && strings.HasSuffix(m.HostPath, uid)
	}) {
		t.Fatalf("mounts %+v", specs[len(specs)-1].Mounts)
	}
	// The CLI learns its tools from the instruction file, after the persona.
	if got := pty.starts[0].Instructions; !strings.Contains(got, "## Tools") || !strings.Contains(got, "`greet`: greet NAME — greets NAME") {
		t.Fatalf("instructions %q", got)
	}
	// The guest holds one token, bound to this conversation and guest key.
	if len(pty.pushes) != 1 || len(pty.pushes[0].Tools) != 1 || pty.pushes[0].Tools[0].Name != "greet" {
		t.Fatalf("pushed %+v", pty.pushes)
	}
	if l, ok := leases.Lookup(uid); !ok || l.Fingerprint != "sha256:guest" {
		t.Fatalf("lease %+v %v", l, ok)
	}

	// A second grant naming the same tool loses it to the older grant; a new tool appears at once.
	e.h.create("grants", greetGrant("g2", "greet"))
	e.h.create("grants", greetGrant("g3", "search"))
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	names, _ = toolmount.Dirs{Root: e.h.dir.Tools()}.List(uid)
	if !slices.Equal(names, []string{"greet", "search"}) {
		t.Fatalf("after regrant: %v", names)
	}
	if last := pty.pushes[len(pty.pushes)-1]; len(last.Tools) != 2 {
		t.Fatalf("re-pushed %+v", last)
	}

	// Pausing releases the lease and removes the directory.
	c := e.conv()
	c.Spec.DesiredState = v1alpha1.ConversationPaused
	if err := e.h.client.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	if _, ok := leases.Lookup(uid); ok {
		t.Fatal("a paused conversation still holds a lease")
	}
	if _, err := os.Stat(filepath.Join(e.h.dir.Tools(), uid)); !os.IsNotExist(err) {
		t.Fatalf("tools dir after pause: %v", err)
	}
}

// TestPhaseToolsWithoutUnresolvedOnes: a tool whose grant still defines its
// own backend (stored before ToolClasses), or whose class is gone or stops
// admitting the namespace, is not mounted; the conversation runs with the
// others and nothing crashes.
func TestPhaseToolsWithoutUnresolvedOnes(t *testing.T) {
	e := newPhaseEnv(t, nil)
	withTools(t, e)
	e.guests.pty.status = ptyapi.StatusInfo{}
	e.h.create("agents", fakeAgentJSON)
	e.h.create("grants", greetGrant("g1", "greet"))
	e.h.create("grants", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"legacy"},"spec":{"subject":"a","tools":[`+
		`{"name":"sh","backend":{"exec":{"command":"/bin/sh"}}}]}}`)
	e.h.create("grants", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"nocls"},"spec":{"subject":"a","tools":[`+
		`{"name":"ghost","className":"gone"}]}}`)
	e.h.create("conversations", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Conversation","metadata":{"name":"c"},"spec":{"agentRef":"a","desiredState":"Active"}}`)
	if _, err := e.settle(); err != nil {
		t.Fatal(err)
	}
	e.want(v1alpha1.ConditionToolsReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "1 tools mounted at /opt/aicli/bin: greet")
	uid := string(e.conv().UID)

	// The class stops admitting the namespace: greet goes too.
	class := &v1alpha1.ToolClass{}
	if err := e.h.client.Get(context.Background(), "", "echo", class); err != nil {
		t.Fatal(err)
	}
	class.Spec.Namespaces = []string{"elsewhere"}
	if err := e.h.client.Update(context.Background(), class); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	if names, _ := (toolmount.Dirs{Root: e.h.dir.Tools()}).List(uid); len(names) != 0 {
		t.Fatalf("tools after the class closed: %v", names)
	}
	e.want(v1alpha1.ConditionToolsReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "no tools granted")
}

func TestPhaseToolsWithoutBinaryWaits(t *testing.T) {
	e := newPhaseEnv(t, nil)
	e.h.create("toolclasses", echoClass)
	e.h.create("agents", fakeAgentJSON)
	e.h.create("grants", greetGrant("g1", "greet"))
	e.h.create("conversations", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Conversation","metadata":{"name":"c"},"spec":{"agentRef":"a","desiredState":"Active"}}`)
	res, err := e.settle()
	if err != nil {
		t.Fatal(err)
	}
	e.want(v1alpha1.ConditionToolsReady, metav1.ConditionFalse, v1alpha1.ReasonToolBinaryMissing, "no tool binary")
	if res.RequeueAfter == 0 || e.running() != 0 {
		t.Fatalf("requeue %v, running %d", res.RequeueAfter, e.running())
	}
}
