package remote_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/convapi/convapitest"
	"aicli.dev/aicli/internal/monitor"
	"aicli.dev/aicli/internal/monitor/remote"
	"aicli.dev/aicli/internal/secrets"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// target is a supervisor API served over TLS with a token bound to namespace
// "team" and minted for monitor "watcher", and a Dialer whose secrets
// (namespace "default") hold that token and the server's CA.
type target struct {
	env     *convapitest.Env
	dialer  *remote.Dialer
	secrets secrets.Store
	rs      *v1alpha1.RemoteSupervisor
}

func newTarget(t *testing.T) *target {
	t.Helper()
	env := convapitest.Start(t)
	url, caFile := env.ServeTLSTokens(t, map[string]apiserver.Token{
		"team-token": {Name: "supervisor-a", Namespaces: []string{"team"}, Monitors: []string{"watcher"}}})
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	store := secrets.Store{Dir: t.TempDir()}
	for name, v := range map[string][]byte{"b-token": []byte("team-token\n"), "b-ca": ca} {
		if err := store.Set("default", name, v); err != nil {
			t.Fatal(err)
		}
	}
	env.CreateAgent(t, "team", "coder")
	return &target{env: env, secrets: store, dialer: &remote.Dialer{Secrets: store},
		rs: &v1alpha1.RemoteSupervisor{Address: url, TokenSecret: "b-token", CASecret: "b-ca", Namespace: "team"}}
}

func (tg *target) side(t *testing.T) *remote.Side {
	t.Helper()
	s, err := tg.dialer.Side("default", tg.rs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The follow delivers every entry once, in order, across streams the server
// cuts: it reconnects from one past the last delivered cursor.
func TestFollowReconnectsWithoutDuplicatesOrGaps(t *testing.T) {
	tg := newTarget(t)
	tg.env.CreateConversation(t, "team", "c1", "coder", v1alpha1.ConversationActive)
	uid := tg.env.UID(t, "team", "c1")
	for i := 1; i <= 5; i++ {
		tg.env.Transcripts.Append(uid, "human", fmt.Sprint("line ", i))
	}
	tg.env.Transcripts.CutSubscriptionsAfter(3) // every stream ends after 3 entries
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := tg.side(t).Follow(ctx, monitor.TargetConversation{Name: "c1"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for len(got) < 11 {
		if len(got) == 4 { // the backlog (2..5) is in: the rest arrives live
			for i := 6; i <= 12; i++ {
				tg.env.Transcripts.Append(uid, "agent", fmt.Sprint("line ", i))
			}
		}
		select {
		case e := <-ch:
			got = append(got, e.Cursor)
		case <-ctx.Done():
			t.Fatalf("follow stalled after cursors %v", got)
		}
	}
	for i, c := range got {
		if c != int64(i+2) {
			t.Fatalf("cursors %v: want 2..12 each once", got)
		}
	}
	if n := tg.env.Transcripts.Subscriptions(); n < 4 {
		t.Errorf("%d subscriptions: the cut streams were not resumed", n)
	}
	select {
	case e := <-ch:
		t.Fatalf("extra entry %d", e.Cursor)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestLastInjectPauseAndCatalog(t *testing.T) {
	tg := newTarget(t)
	ctx := context.Background()
	tg.env.CreateConversation(t, "team", "c1", "coder", v1alpha1.ConversationActive)
	tg.env.CreateConversation(t, "team", "c2", "coder", v1alpha1.ConversationPaused)
	uid := tg.env.UID(t, "team", "c1")
	side := tg.side(t)
	c1 := monitor.TargetConversation{Name: "c1"}

	if last, err := side.Last(ctx, c1); err != nil || last != 0 {
		t.Fatalf("Last of an empty transcript = %d, %v", last, err)
	}
	for i := 0; i < 7; i++ {
		tg.env.Transcripts.Append(uid, "agent", "x")
	}
	if last, err := side.Last(ctx, c1); err != nil || last != 7 {
		t.Fatalf("Last = %d, %v; want 7", last, err)
	}

	pty := tg.env.Live(t, "team", "c1")
	if err := side.Inject(ctx, c1, "watcher", "look at the lock order"); err != nil {
		t.Fatalf("Inject: %v", err)
	}
	want := transcriptwire.AdvicePrefix("watcher") + "look at the lock order"
	if msgs := pty.Messages(); len(msgs) != 1 || msgs[0] != want {
		t.Errorf("guest got %q, want %q", msgs, want)
	}
	if calls := tg.env.Attribution.Calls(); len(calls) != 1 || calls[0].Speaker != "injected:watcher" {
		t.Errorf("attribution %+v", calls)
	}
	if err := side.Inject(ctx, monitor.TargetConversation{Name: "c2"}, "watcher", "hi"); !apierrors.IsConflict(err) {
		t.Errorf("Inject into a paused conversation: %v, want the server's 409", err)
	}
	// The token speaks for watcher only.
	if err := side.Inject(ctx, c1, "auditor", "hi"); !apierrors.IsForbidden(err) {
		t.Errorf("Inject as a monitor the token was not minted for: %v, want the server's 403", err)
	}

	convs, err := side.Conversations(ctx, "coder")
	if err != nil || len(convs) != 2 {
		t.Fatalf("Conversations = %d, %v", len(convs), err)
	}
	if err := side.Agent(ctx, "coder"); err != nil {
		t.Errorf("Agent(coder): %v", err)
	}
	if err := side.Agent(ctx, "nobody"); !apierrors.IsNotFound(err) {
		t.Errorf("Agent(nobody): %v, want NotFound", err)
	}

	if err := side.Pause(ctx, c1); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	obj := tg.env.Server.Object(t, "conversations", "team", "c1")
	if d := obj.Object["spec"].(map[string]any)["desiredState"]; d != string(v1alpha1.ConversationPaused) {
		t.Errorf("desiredState after Pause = %v", d)
	}
}

func TestDialerRefusals(t *testing.T) {
	tg := newTarget(t)
	ctx := context.Background()

	missing := *tg.rs
	missing.TokenSecret = "nope"
	_, err := tg.dialer.Side("default", &missing)
	var se *remote.SecretError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "spec.target.supervisor.tokenSecret") ||
		!errors.Is(err, secrets.ErrNotFound) {
		t.Errorf("missing token Secret: %v", err)
	}

	// The token is bound to "team": another namespace is forbidden.
	other := *tg.rs
	other.Namespace = "elsewhere"
	side, err := tg.dialer.Side("default", &other)
	if err != nil {
		t.Fatal(err)
	}
	if err := side.Agent(ctx, "coder"); !apierrors.IsForbidden(err) {
		t.Errorf("a namespace the token is not bound to: %v, want 403", err)
	}

	// A rotated Secret is picked up: the new (wrong) token is sent.
	if err := tg.secrets.Set("default", "b-token", []byte("wrong")); err != nil {
		t.Fatal(err)
	}
	if err := tg.side(t).Agent(ctx, "coder"); !apierrors.IsUnauthorized(err) {
		t.Errorf("a rejected token: %v, want 401", err)
	}
}
