package history

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/transcript"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// env is a store with its transcript log, a resolver of known
// conversations, and an index directory.
type env struct {
	st       *store.Store
	log      *transcript.StoreLog
	indexDir string

	mu    sync.Mutex
	convs map[string]Conversation
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	dir := tb.TempDir()
	st, err := store.Open(filepath.Join(dir, "store"), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return &env{st: st, log: &transcript.StoreLog{Store: st}, indexDir: filepath.Join(dir, "history"),
		convs: map[string]Conversation{}}
}

// conv makes uid resolvable as ns/agent/name.
func (e *env) conv(uid, ns, agent, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.convs[uid] = Conversation{Namespace: ns, Agent: agent, Name: name}
}

func (e *env) Resolve(_ context.Context, uid string) (Conversation, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.convs[uid]
	return c, ok, nil
}

// open opens the index and hooks it to the transcript log.
func (e *env) open(tb testing.TB, opts Options) *Index {
	tb.Helper()
	ix, err := Open(context.Background(), e.st, e.indexDir, e, opts)
	if err != nil {
		tb.Fatal(err)
	}
	e.log.Committed = ix.Committed
	tb.Cleanup(func() { _ = ix.Close() })
	return ix
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// say commits one entry per text, a minute apart from at.
func (e *env) say(tb testing.TB, uid, speaker string, at time.Time, texts ...string) {
	tb.Helper()
	entries := make([]transcriptwire.Entry, len(texts))
	for i, text := range texts {
		entries[i] = transcriptwire.Entry{Speaker: speaker, Text: text, Time: at.Add(time.Duration(i) * time.Minute)}
	}
	if _, err := e.log.Append(context.Background(), uid, entries); err != nil {
		tb.Fatal(err)
	}
}

func agents(names ...string) []v1alpha1.TargetRef {
	out := make([]v1alpha1.TargetRef, len(names))
	for i, n := range names {
		out[i] = v1alpha1.TargetRef{Agent: n}
	}
	return out
}

func search(tb testing.TB, ix *Index, q Query) []Hit {
	tb.Helper()
	if q.Namespace == "" {
		q.Namespace = "team"
	}
	hits, err := ix.Search(context.Background(), q)
	if err != nil {
		tb.Fatalf("search %+v: %v", q, err)
	}
	return hits
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
