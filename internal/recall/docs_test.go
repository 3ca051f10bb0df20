package recall

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestPutGetListDelete(t *testing.T) {
	ctx := context.Background()
	r := newEnv(t).open(t)

	a := mustPut(t, r, Doc{ID: "a", Title: "first", Tags: []string{"x"}, Body: "alpha body"})
	b := mustPut(t, r, Doc{ID: "b", Body: "beta body"})
	auto := mustPut(t, r, Doc{Body: "gamma body"})
	if auto.ID == "" || a.Updated.IsZero() {
		t.Fatalf("want an assigned ID and Updated stamp, got %+v %+v", auto, a)
	}

	got, err := r.Get(ctx, testRef, "a")
	if err != nil || got.Title != "first" || got.Body != "alpha body" || len(got.Tags) != 1 {
		t.Fatalf("Get a = %+v, %v", got, err)
	}
	all, err := r.List(ctx, testRef, 0, "")
	if err != nil || len(all) != 3 {
		t.Fatalf("List = %d docs, %v", len(all), err)
	}
	page, err := r.List(ctx, testRef, 1, "a")
	if err != nil || len(page) != 1 || page[0].ID != b.ID {
		t.Fatalf("List after a = %+v, %v", page, err)
	}
	other := BucketRef{Namespace: "team", Agent: "alice", Bucket: "other"}
	if docs, _ := r.List(ctx, other, 0, ""); len(docs) != 0 {
		t.Fatalf("other bucket sees %d docs", len(docs))
	}

	if err := r.Delete(ctx, testRef, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, testRef, "a"); !apierrors.IsNotFound(err) {
		t.Fatalf("Get deleted = %v, want NotFound", err)
	}
	if hits, _ := r.Search(ctx, testRef, "alpha", 10); len(hits) != 0 {
		t.Fatalf("deleted doc still found: %v", ids(hits))
	}
	if err := r.Delete(ctx, testRef, "a"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}

func TestOverLimitRefused(t *testing.T) {
	ctx := context.Background()
	r := newEnv(t).open(t)
	_, err := r.Put(ctx, testRef, Doc{ID: "big", Body: strings.Repeat("x", MaxBodyBytes+1)})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "262144") {
		t.Fatalf("err = %v, want ErrTooLarge naming the limit", err)
	}
	if _, err := r.Get(ctx, testRef, "big"); !apierrors.IsNotFound(err) {
		t.Fatalf("refused doc was stored: %v", err)
	}
	if _, err := r.Put(ctx, testRef, Doc{ID: "edge", Body: strings.Repeat("x", MaxBodyBytes)}); err != nil {
		t.Fatalf("doc at the limit refused: %v", err)
	}
}

func TestBadNamesRefused(t *testing.T) {
	ctx := context.Background()
	r := newEnv(t).open(t)
	for _, ref := range []BucketRef{
		{Namespace: "", Agent: "a", Bucket: "b"},
		{Namespace: "n", Agent: "a/b", Bucket: "b"},
		{Namespace: "n", Agent: "a", Bucket: ".."},
		{Namespace: "n", Agent: "a", Bucket: "Notes"},
		{Namespace: "n", Agent: "a", Bucket: "a.b"},
	} {
		if _, err := r.Put(ctx, ref, Doc{Body: "x"}); err == nil {
			t.Errorf("Put to %+v accepted", ref)
		}
	}
	if _, err := r.Put(ctx, testRef, Doc{ID: "a/b", Body: "x"}); err == nil {
		t.Error("ID with '/' accepted")
	}
}

// Batches return before bleve persists them (unsafe_batch); a clean Close
// must flush, so the reopened index is used as is, with every document.
func TestCloseFlushesTheIndex(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	r := e.open(t)
	docs := benchDocs(500, 11)
	for i := 0; i < len(docs); i += 100 {
		if _, err := r.PutMany(ctx, testRef, docs[i:i+100]); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r.bucketDir(testRef), dirtyMarker)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dirty marker after a clean close: %v", err)
	}
	// Take all but one document out of the store behind recall's back: a
	// rebuilt index would count 1, the flushed one counts 500.
	for _, d := range docs[1:] {
		if err := e.st.DeleteKV(ctx, kvBucket, testRef.key(d.ID)); err != nil {
			t.Fatal(err)
		}
	}
	r = e.open(t)
	got, err := r.Buckets(ctx, testRef.Namespace, testRef.Agent)
	if err != nil || len(got) != 1 || got[0].Documents != 500 {
		t.Fatalf("buckets after reopen: %+v %v, want notes with 500 indexed documents", got, err)
	}
}

func TestPutManyKeepsTheLastOfAnID(t *testing.T) {
	ctx := context.Background()
	r := newEnv(t).open(t)
	if _, err := r.PutMany(ctx, testRef, []Doc{{ID: "x", Body: "first apple"}, {ID: "y", Body: "other"}, {ID: "x", Body: "second pear"}}); err != nil {
		t.Fatal(err)
	}
	if d, err := r.Get(ctx, testRef, "x"); err != nil || d.Body != "second pear" {
		t.Fatalf("x = %+v %v", d, err)
	}
	if hits, _ := r.Search(ctx, testRef, "apple", 10); len(hits) != 0 {
		t.Fatalf("the replaced version is indexed: %v", ids(hits))
	}
	if hits, _ := r.Search(ctx, testRef, "pear", 10); len(hits) != 1 {
		t.Fatalf("pear: %v", ids(hits))
	}
}

func TestBuckets(t *testing.T) {
	ctx := context.Background()
	r := newEnv(t).open(t)
	for _, b := range []string{"a", "a-b", "a-c", "b", "a"} {
		if _, err := r.Put(ctx, BucketRef{Namespace: "team", Agent: "alice", Bucket: b}, Doc{Body: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	mustPut(t, r, Doc{Body: "x"}) // team/alice/notes
	if _, err := r.Put(ctx, BucketRef{Namespace: "team", Agent: "alicia", Bucket: "z"}, Doc{Body: "x"}); err != nil {
		t.Fatal(err)
	}
	got, err := r.Buckets(ctx, "team", "alice")
	want := []BucketInfo{{"a", 2}, {"a-b", 1}, {"a-c", 1}, {"b", 1}, {"notes", 1}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Buckets = %+v %v, want %+v", got, err, want)
	}
	if got, err := r.Buckets(ctx, "team", "nobody"); err != nil || len(got) != 0 {
		t.Fatalf("no buckets: %+v %v", got, err)
	}
}
