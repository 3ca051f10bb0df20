package recall

import (
	"context"
	"path/filepath"
	"testing"

	"aicli.dev/aicli/internal/store"
)

var testRef = BucketRef{Namespace: "team", Agent: "alice", Bucket: "notes"}

// env is a store and a Recall over one temporary directory.
type env struct {
	st       *store.Store
	indexDir string
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	dir := tb.TempDir()
	st, err := store.Open(filepath.Join(dir, "store"), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return &env{st: st, indexDir: filepath.Join(dir, "recall")}
}

func (e *env) open(tb testing.TB) *Recall {
	tb.Helper()
	return e.openWith(tb, Options{})
}

func (e *env) openWith(tb testing.TB, opts Options) *Recall {
	tb.Helper()
	r, err := Open(e.st, e.indexDir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = r.Close() })
	return r
}

func mustPut(tb testing.TB, r *Recall, d Doc) Doc {
	tb.Helper()
	out, err := r.Put(context.Background(), testRef, d)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}
