package tools_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/builtins"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/mailbox"
	"aicli.dev/aicli/internal/postoffice"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/tools"
)

// BenchmarkMailSendRoundTrip measures the built-in mail-send end to end in-process — caller → guest relay socket →
// side-channel stream → tool server → built-ins → post office (agents and grants read, permission) → mailbox append
// synced to a real pebble store → exit code back — against the synced append alone in the same run.
func BenchmarkMailSendRoundTrip(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	c := storeclient.New(st)
	for name, peers := range map[string]*v1alpha1.PeerPolicy{"a": {SendTo: &v1alpha1.PeerSet{Agents: []string{"b"}}}, "b": {}} {
		ag := &v1alpha1.Agent{Spec: v1alpha1.AgentSpec{Harness: "fake", Peers: peers}}
		ag.Namespace, ag.Name = "ns", name
		if err := c.Create(ctx, ag); err != nil {
			b.Fatal(err)
		}
	}
	mb, err := mailbox.Open(ctx, st, mailbox.Options{})
	if err != nil {
		b.Fatal(err)
	}
	bs := &builtins.Server{Client: c, Office: &postoffice.Office{Client: c, Mailbox: mb}, Mailbox: mb}
	auth := &tools.Authorization{Namespace: "ns", Agent: "a", Conversation: "a-1", Grant: "@builtin",
		Tool: grants.ResolvedTool{Name: "mail-send"}, Builtin: true}
	b.Run("mail-send", func(b *testing.B) {
		stk := newStack(b, &fakeAuth{tools: map[string]*tools.Authorization{"mail-send": auth}},
			func(o *tools.Options) { o.Builtins = bs })
		relayCall(b, stk.socket, "mail-send", "b", "warm-up")
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			start := time.Now()
			if code := relayCall(b, stk.socket, "mail-send", "b", fmt.Sprint("message ", i)); code != 0 {
				b.Fatalf("exit %d", code)
			}
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
	b.Run("append-only", func(b *testing.B) { // the synced append alone: the floor of any send
		lat := make([]time.Duration, 0, b.N)
		for i := range b.N {
			start := time.Now()
			if _, err := mb.Append(ctx, mailbox.Message{Namespace: "ns", From: "a", To: "b", Body: fmt.Sprint("m", i)}); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
}
