// Package historytest seeds an API test server with agents, conversations,
// committed transcripts and a caught-up history index.
package historytest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/history"
	"aicli.dev/aicli/internal/history/historyapi"
	"aicli.dev/aicli/internal/toolcalls/toolcallstest"
	"aicli.dev/aicli/internal/transcript"
	"aicli.dev/aicli/internal/transcript/transcriptwire"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// T0 is the time of the first seeded entry.
var T0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// Serve seeds srv (namespace default: agents alice and bob; conversations
// alice-1 and alice-2 of alice, bob-1 of bob) with these transcripts, opens
// a history index over them (closed when the test ends), registers the
// history API on srv, and returns the index once it has caught up.
//
//	alice-1 #1 human T0      "please fix the flaky deploy script"
//	alice-1 #2 agent T0+5m   "the deploy script was racing the migration; fixed"
//	alice-2 #1 mail:bob T0+1h "bob asks about the deploy window"
//	bob-1   #1 agent T0+2h   "deploying the new gateway now"
func Serve(tb testing.TB, srv *apiservertest.Server) *history.Index {
	tb.Helper()
	ctx := context.Background()
	for _, a := range []string{"alice", "bob"} {
		toolcallstest.Create(tb, srv, "agents", &v1alpha1.Agent{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Agent"},
			ObjectMeta: metav1.ObjectMeta{Name: a, Namespace: "default"},
			Spec:       v1alpha1.AgentSpec{Harness: v1alpha1.HarnessClaude},
		})
	}
	for conv, agent := range map[string]string{"alice-1": "alice", "alice-2": "alice", "bob-1": "bob"} {
		toolcallstest.Conversation(tb, srv, "default", conv, agent)
	}
	log := &transcript.StoreLog{Store: srv.Store}
	for _, e := range []struct {
		conv, speaker string
		at            time.Duration
		text          string
	}{
		{"alice-1", "human", 0, "please fix the flaky deploy script"},
		{"alice-1", "agent", 5 * time.Minute, "the deploy script was racing the migration; fixed"},
		{"alice-2", "mail:bob", time.Hour, "bob asks about the deploy window"},
		{"bob-1", "agent", 2 * time.Hour, "deploying the new gateway now"},
	} {
		uid := string(srv.Object(tb, "conversations", "default", e.conv).GetUID())
		if _, err := log.Append(ctx, uid, []transcriptwire.Entry{{Speaker: e.speaker, Text: e.text, Time: T0.Add(e.at)}}); err != nil {
			tb.Fatal(err)
		}
	}

	ix, err := history.Open(ctx, srv.Store, filepath.Join(tb.TempDir(), "history"), &history.StoreResolver{Store: srv.Store},
		history.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ix.Close() })
	if err := ix.CatchUp(ctx); err != nil {
		tb.Fatal(err)
	}
	historyapi.Register(srv.API, ix, srv.Store)
	return ix
}
