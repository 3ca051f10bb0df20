package recall

import (
	"context"
	"errors"
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
	} {
		if _, err := r.Put(ctx, ref, Doc{Body: "x"}); err == nil {
			t.Errorf("Put to %+v accepted", ref)
		}
	}
	if _, err := r.Put(ctx, testRef, Doc{ID: "a/b", Body: "x"}); err == nil {
		t.Error("ID with '/' accepted")
	}
}
