package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// seed commits the transcripts of two agents of team (alice: two
// conversations; bob: one) and one of another namespace.
func seed(t *testing.T, e *env) {
	t.Helper()
	e.conv("u-a1", "team", "alice", "alice-1")
	e.conv("u-a2", "team", "alice", "alice-2")
	e.conv("u-b1", "team", "bob", "bob-1")
	e.conv("u-x1", "other", "alice", "alice-1")
	e.say(t, "u-a1", "human", t0, "please fix the flaky deploy script", "and run the tests")
	e.say(t, "u-a1", "agent", t0.Add(5*time.Minute), "the deploy script was racing the migration; fixed")
	e.say(t, "u-a2", "mail:bob", t0.Add(time.Hour), "bob asks about the deploy window")
	e.say(t, "u-b1", "agent", t0.Add(2*time.Hour), "deploying the new gateway now")
	e.say(t, "u-x1", "agent", t0.Add(3*time.Hour), "deploy of another namespace")
}

func TestIndexesEntriesAsTheyCommit(t *testing.T) {
	e := newEnv(t)
	ix := e.open(t, Options{})
	must(t, ix.CatchUp(context.Background())) // the (empty) catch-up at open is over
	seed(t, e)
	must(t, ix.Flush(context.Background()))

	hits := search(t, ix, Query{Targets: agents("alice"), Text: "deploy"})
	if len(hits) != 3 {
		t.Fatalf("alice deploy: %d hits, want 3: %+v", len(hits), hits)
	}
	var racing Hit
	for _, h := range hits {
		if h.Cursor == 3 {
			racing = h
		}
		if h.Namespace != "team" || h.Agent != "alice" || h.Score <= 0 {
			t.Errorf("hit %+v", h)
		}
	}
	want := Hit{Namespace: "team", Agent: "alice", Conversation: "alice-1", ConversationUID: "u-a1", Cursor: 3,
		Speaker: "agent", Time: t0.Add(5 * time.Minute), Snippet: "the **deploy** script was racing the migration; fixed",
		Score: racing.Score}
	if !reflect.DeepEqual(racing, want) {
		t.Fatalf("hit\n%+v\nwant\n%+v", racing, want)
	}

	// A later commit is found after the next flush.
	e.say(t, "u-a2", "human", t0.Add(4*time.Hour), "deployment postponed")
	must(t, ix.Flush(context.Background()))
	if hits := search(t, ix, Query{Targets: agents("alice"), Text: "postponed"}); len(hits) != 1 || hits[0].Cursor != 2 {
		t.Fatalf("postponed: %+v", hits)
	}
}

func TestFilters(t *testing.T) {
	e := newEnv(t)
	seed(t, e)
	ix := e.open(t, Options{})
	must(t, ix.CatchUp(context.Background()))

	convs := func(hits []Hit) string {
		var out []string
		for _, h := range hits {
			out = append(out, fmt.Sprintf("%s/%s/%s#%d", h.Namespace, h.Agent, h.Conversation, h.Cursor))
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		name string
		q    Query
		want string
	}{
		{"bob only", Query{Targets: agents("bob"), Text: "deploy"}, "team/bob/bob-1#1"},
		{"other namespace", Query{Namespace: "other", Targets: agents("alice"), Text: "deploy"}, "other/alice/alice-1#1"},
		{"one conversation", Query{Targets: []v1alpha1.TargetRef{{Agent: "alice", Conversation: "alice-2"}}, Text: "deploy"},
			"team/alice/alice-2#1"},
		{"speaker", Query{Targets: agents("alice", "bob"), Text: "deploy", Speaker: "agent"},
			"team/bob/bob-1#1 team/alice/alice-1#3"},
		{"speaker mail", Query{Targets: agents("alice"), Speaker: "mail:bob"}, "team/alice/alice-2#1"},
		{"since, newest first", Query{Targets: agents("alice", "bob"), Since: t0.Add(5 * time.Minute)},
			"team/bob/bob-1#1 team/alice/alice-2#1 team/alice/alice-1#3"},
		{"no text: newest first", Query{Targets: agents("alice")},
			"team/alice/alice-2#1 team/alice/alice-1#3 team/alice/alice-1#2 team/alice/alice-1#1"},
		{"limit", Query{Targets: agents("alice"), Limit: 1}, "team/alice/alice-2#1"},
		{"stemming and phrase", Query{Targets: agents("alice", "bob"), Text: `+"deploy script" +racing`}, "team/alice/alice-1#3"},
		{"unknown agent", Query{Targets: agents("carol"), Text: "deploy"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits := search(t, ix, tc.q)
			if tc.name == "speaker" { // both match one word once: order by score is not the point
				if len(hits) != 2 || hits[0].Speaker != "agent" || hits[1].Speaker != "agent" {
					t.Fatalf("got %s", convs(hits))
				}
				return
			}
			if got := convs(hits); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	if hits := search(t, ix, Query{Targets: agents("alice", "bob"), Text: "deploying"}); len(hits) != 4 {
		t.Fatalf("stemmed deploying: %d hits", len(hits))
	}
}

func TestQueryErrors(t *testing.T) {
	e := newEnv(t)
	ix := e.open(t, Options{})
	for _, tc := range []struct {
		text   string
		offset int
	}{
		{`deploy "unclosed phrase`, 7},
		{`deploy text:`, 7},
		{`+`, 0},
	} {
		_, err := ix.Search(context.Background(), Query{Namespace: "team", Targets: agents("alice"), Text: tc.text})
		var qe *QueryError
		if !errors.As(err, &qe) || qe.Offset != tc.offset || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", tc.offset)) {
			t.Errorf("%q: err = %v, want a QueryError at offset %d", tc.text, err, tc.offset)
		}
	}
	for _, q := range []Query{{Targets: agents("alice")}, {Namespace: "team"}, {Namespace: "team", Targets: agents("")}} {
		if _, err := ix.Search(context.Background(), q); err == nil {
			t.Errorf("%+v: want an error", q)
		}
	}
}

// all returns every hit of the seeded targets, newest first.
func all(t *testing.T, ix *Index) []Hit {
	t.Helper()
	return search(t, ix, Query{Targets: agents("alice", "bob"), Limit: 200})
}

func TestRestartResumesFromCheckpoints(t *testing.T) {
	e := newEnv(t)
	seed(t, e)
	ix := e.open(t, Options{})
	must(t, ix.CatchUp(context.Background()))
	before := len(all(t, ix))
	must(t, ix.Close())

	// Committed while the index is closed: found by the catch-up at open.
	e.log.Committed = nil
	e.say(t, "u-b1", "human", t0.Add(5*time.Hour), "roll back the gateway")
	ix = e.open(t, Options{})
	must(t, ix.CatchUp(context.Background()))
	must(t, ix.CatchUp(context.Background())) // a second catch-up indexes nothing again
	got := all(t, ix)
	if len(got) != before+1 || got[0].Conversation != "bob-1" || got[0].Cursor != 2 {
		t.Fatalf("after restart: %d hits (before %d): %+v", len(got), before, got)
	}
	n, err := ix.ix.DocCount()
	if err != nil || n != uint64(before+2) { // + the other namespace's entry
		t.Fatalf("doc count %d, %v; want %d (no duplicates)", n, err, before+2)
	}
}

func TestRebuildsDeletedOrCorruptIndex(t *testing.T) {
	e := newEnv(t)
	seed(t, e)
	ix := e.open(t, Options{})
	must(t, ix.CatchUp(context.Background()))
	queries := []Query{{Targets: agents("alice", "bob"), Text: "deploy script"}, {Targets: agents("alice"), Limit: 200}}
	var want [][]Hit
	for _, q := range queries {
		want = append(want, search(t, ix, q))
	}
	must(t, ix.Close())

	for name, damage := range map[string]func(){
		"deleted": func() { must(t, os.RemoveAll(e.indexDir)) },
		"corrupt": func() {
			must(t, os.WriteFile(filepath.Join(e.indexDir, mappingVersion, "index_meta.json"), []byte("{garbage"), 0o600))
		},
	} {
		damage()
		ix = e.open(t, Options{})
		must(t, ix.CatchUp(context.Background()))
		for i, q := range queries {
			if got := search(t, ix, q); !reflect.DeepEqual(got, want[i]) {
				t.Fatalf("%s: %+v\ngot  %+v\nwant %+v", name, q, got, want[i])
			}
		}
		must(t, ix.Close())
	}
}

func TestUnresolvedConversationIsRetried(t *testing.T) {
	e := newEnv(t)
	ix := e.open(t, Options{})
	e.say(t, "u-new", "human", t0, "hello from a conversation nobody knows yet")
	must(t, ix.Flush(context.Background()))
	e.conv("u-new", "team", "alice", "alice-9")
	if hits := search(t, ix, Query{Targets: agents("alice"), Text: "hello"}); len(hits) != 0 {
		t.Fatalf("indexed before resolvable: %+v", hits)
	}
	must(t, ix.CatchUp(context.Background()))
	if hits := search(t, ix, Query{Targets: agents("alice"), Text: "hello"}); len(hits) != 1 || hits[0].Conversation != "alice-9" {
		t.Fatalf("after catch-up: %+v", hits)
	}
}

func TestBatchAfterAGapReadsTheGap(t *testing.T) {
	e := newEnv(t)
	e.conv("u-a1", "team", "alice", "alice-1")
	ix := e.open(t, Options{})
	must(t, ix.CatchUp(context.Background()))
	e.log.Committed = nil // these batches are "dropped"
	e.say(t, "u-a1", "human", t0, "one", "two")
	e.log.Committed = ix.Committed
	e.say(t, "u-a1", "human", t0.Add(time.Hour), "three")
	must(t, ix.Flush(context.Background()))
	if got := search(t, ix, Query{Targets: agents("alice")}); len(got) != 3 {
		t.Fatalf("%d hits, want 3: %+v", len(got), got)
	}
	// A late duplicate of an indexed batch changes nothing.
	ix.Committed("u-a1", []transcriptwire.Entry{{Cursor: 1, Speaker: "human", Text: "one", Time: t0}})
	must(t, ix.Flush(context.Background()))
	if n, _ := ix.ix.DocCount(); n != 3 {
		t.Fatalf("doc count %d, want 3", n)
	}
}

func TestClosedIndex(t *testing.T) {
	e := newEnv(t)
	ix := e.open(t, Options{})
	must(t, ix.Close())
	ix.Committed("u", []transcriptwire.Entry{{Cursor: 1}}) // no panic, no block
	if _, err := ix.Search(context.Background(), Query{Namespace: "team", Targets: agents("a")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("search after close: %v", err)
	}
	if err := ix.Flush(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("flush after close: %v", err)
	}
}

// TestPeriodicCatchUpRetries checks that entries left unindexed (their
// conversation unknown at first, then a resolver error) are indexed by the
// periodic catch-up without anyone asking.
func TestPeriodicCatchUpRetries(t *testing.T) {
	e := newEnv(t)
	failing := true
	var mu sync.Mutex
	resolver := ResolverFunc(func(ctx context.Context, uid string) (Conversation, bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return Conversation{}, false, errors.New("store unavailable")
		}
		return e.Resolve(ctx, uid)
	})
	ix, err := Open(context.Background(), e.st, e.indexDir, resolver, Options{CatchUpInterval: 20 * time.Millisecond})
	must(t, err)
	defer ix.Close()
	e.log.Committed = ix.Committed
	e.conv("u-a1", "team", "alice", "alice-1")
	e.say(t, "u-a1", "human", t0, "remember the milk")
	must(t, ix.Flush(context.Background()))
	if hits := search(t, ix, Query{Targets: agents("alice"), Text: "milk"}); len(hits) != 0 {
		t.Fatalf("indexed despite the resolver error: %+v", hits)
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for len(search(t, ix, Query{Targets: agents("alice"), Text: "milk"})) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the periodic catch-up did not index the entry")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A search by speaker human never returns unattributed entries (text the CLI
// wrote into its own session store); they are found as unattributed.
func TestSpeakerHumanExcludesUnattributed(t *testing.T) {
	e := newEnv(t)
	seed(t, e)
	e.say(t, "u-a1", transcriptwire.SpeakerUnattributed, t0.Add(6*time.Minute), "operator instructions: deploy to prod")
	ix := e.open(t, Options{})
	must(t, ix.CatchUp(context.Background()))
	for _, h := range search(t, ix, Query{Targets: agents("alice"), Speaker: transcriptwire.SpeakerHuman}) {
		if h.Speaker != transcriptwire.SpeakerHuman || strings.Contains(h.Snippet, "operator") {
			t.Errorf("a human search returned %+v", h)
		}
	}
	hits := search(t, ix, Query{Targets: agents("alice"), Speaker: transcriptwire.SpeakerUnattributed})
	if len(hits) != 1 || hits[0].Cursor != 4 {
		t.Errorf("unattributed search: %+v", hits)
	}
}
