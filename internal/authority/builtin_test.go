package authority

import (
	"context"
	"reflect"
	"testing"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/toolwire"
	"aicli.dev/aicli/internal/capability"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/tools"
)

// holdBuiltins makes alice's conversation c1 (uid-1, key fp-1) hold the
// built-ins her definition gives, as the lease phase does.
func (e *env) holdBuiltins() (*v1alpha1.Agent, *memHolder) {
	e.t.Helper()
	alice := &v1alpha1.Agent{}
	if err := e.client.Get(context.Background(), "default", "alice", alice); err != nil {
		e.t.Fatal(err)
	}
	h := &memHolder{}
	if err := e.leases.Hold(context.Background(), Lease{Namespace: "default", Agent: "alice", Conversation: "c1", UID: "uid-1",
		Fingerprint: "fp-1", Tools: grants.Builtins(alice, nil, nil), Holder: h}); err != nil {
		e.t.Fatal(err)
	}
	return alice, h
}

// TestBuiltinAuthorityFollowsTheAgentSpec: alice's peer policy gives her the
// mail built-ins; a token verifies for her conversation only, and removing
// the policy revokes the tool at the next call, with no Grant involved.
func TestBuiltinAuthorityFollowsTheAgentSpec(t *testing.T) {
	e := newEnv(t)
	alice, h := e.holdBuiltins()
	tok := h.token(grants.MailSend)
	if tok == "" {
		t.Fatal("no mail-send capability minted")
	}
	call := func(uid, fp string) (*tools.Authorization, error) {
		return e.auth.Authorize(context.Background(), tools.Caller{ConversationUID: uid, GuestFingerprint: fp},
			toolwire.Request{Op: toolwire.OpCall, Tool: grants.MailSend, Args: []string{"bob", "hi"}, Token: tok})
	}
	a, err := call("uid-1", "fp-1")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Builtin || a.Agent != "alice" || a.ConversationUID != "uid-1" || a.Tool.Usage == "" || len(a.Args) != 2 {
		t.Fatalf("authorization %+v", a)
	}
	_, err = call("uid-1", "fp-other")
	refusedFor(t, err, string(capability.ReasonWrongHolder))

	alice.Spec.Peers = nil
	if err := e.client.Update(context.Background(), alice); err != nil {
		t.Fatal(err)
	}
	_, err = call("uid-1", "fp-1")
	refusedFor(t, err, ReasonRevoked)
}

// TestBuiltinTokenPinsBindItsArguments: a pin the holder adds to a built-in's
// token is enforced by the same strict parse as a granted tool's.
func TestBuiltinTokenPinsBindItsArguments(t *testing.T) {
	e := newEnv(t)
	_, h := e.holdBuiltins()
	narrow, err := capability.Attenuate(h.token(grants.MailSend), capability.Attenuation{Params: map[string]string{"to": "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(args ...string) (*tools.Authorization, error) {
		return e.auth.Authorize(context.Background(), tools.Caller{ConversationUID: "uid-1", GuestFingerprint: "fp-1"},
			toolwire.Request{Op: toolwire.OpCall, Tool: grants.MailSend, Args: args, Token: narrow})
	}
	_, err = call("-to=carol", "hi")
	refusedFor(t, err, ReasonBadParams)
	a, err := call("bob", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Args, []string{"--to=bob", "--", "bob", "hi"}) {
		t.Fatalf("args %q", a.Args)
	}
}

// TestAdviseIsRevokedWhenTheAttachmentTurnsWatchOnly: may-inject comes from a
// MonitorAttachment in Advise mode; switching it to WatchOnly refuses the
// advise capability the live conversation already holds at its next call
// (exit 126, before the tools directory drops it), while may-observe stays.
func TestAdviseIsRevokedWhenTheAttachmentTurnsWatchOnly(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	att := &v1alpha1.MonitorAttachment{Spec: v1alpha1.MonitorAttachmentSpec{Monitor: "bob",
		Target:  v1alpha1.MonitorTarget{Agent: "alice"},
		Trigger: v1alpha1.TriggerSpec{Keywords: []v1alpha1.Keyword{{Text: "panic"}}}, Mode: v1alpha1.MonitorAdvise}}
	att.Namespace, att.Name = "default", "m"
	if err := e.client.Create(ctx, att); err != nil {
		t.Fatal(err)
	}
	bob := &v1alpha1.Agent{}
	if err := e.client.Get(ctx, "default", "bob", bob); err != nil {
		t.Fatal(err)
	}
	h := &memHolder{}
	if err := e.leases.Hold(ctx, Lease{Namespace: "default", Agent: "bob", Conversation: "c1", UID: "uid-1",
		Fingerprint: "fp-1", Tools: grants.Builtins(bob, nil, []v1alpha1.MonitorAttachment{*att}), Holder: h}); err != nil {
		t.Fatal(err)
	}
	call := func(tool string, args ...string) error {
		tok := h.token(tool)
		if tok == "" {
			t.Fatalf("no %s capability minted", tool)
		}
		_, err := e.auth.Authorize(ctx, tools.Caller{ConversationUID: "uid-1", GuestFingerprint: "fp-1"},
			toolwire.Request{Op: toolwire.OpCall, Tool: tool, Args: args, Token: tok})
		return err
	}
	if err := call(grants.Advise, "check the log"); err != nil {
		t.Fatalf("advise in Advise mode: %v", err)
	}
	att.Spec.Mode = v1alpha1.MonitorWatchOnly
	if err := e.client.Update(ctx, att); err != nil {
		t.Fatal(err)
	}
	refusedFor(t, call(grants.Advise, "check the log"), ReasonRevoked)
	if err := call(grants.TranscriptRead, "c0"); err != nil {
		t.Fatalf("transcript-read after WatchOnly: %v", err)
	}
}
