package store_test

import (
	"bytes"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/store/storetest"
)

func TestKV(t *testing.T) {
	s := storetest.Open(t, store.Options{})
	ctx := ctxT(t)
	rv := s.CurrentRV()
	if _, err := s.GetKV(ctx, "b", "k"); !apierrors.IsNotFound(err) {
		t.Fatalf("get absent: %v", err)
	}
	if err := s.PutKV(ctx, "b", "k", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKV(ctx, "b", "k", []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKV(ctx, "b2", "k", []byte("other bucket")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKV(ctx, "b", "empty", nil); err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetKV(ctx, "b", "k"); err != nil || string(v) != "v2" {
		t.Fatalf("get: %q %v", v, err)
	}
	if v, err := s.GetKV(ctx, "b", "empty"); err != nil || len(v) != 0 {
		t.Fatalf("empty value: %q %v", v, err)
	}
	if v, err := s.TakeKV(ctx, "b", "k"); err != nil || string(v) != "v2" {
		t.Fatalf("take: %q %v", v, err)
	}
	if _, err := s.TakeKV(ctx, "b", "k"); !apierrors.IsNotFound(err) {
		t.Fatalf("second take: %v", err)
	}
	if _, err := s.GetKV(ctx, "b", "k"); !apierrors.IsNotFound(err) {
		t.Fatalf("get after take: %v", err)
	}
	if err := s.DeleteKV(ctx, "b2", "k"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteKV(ctx, "b2", "k"); err != nil {
		t.Fatalf("delete absent: %v", err)
	}
	if _, err := s.GetKV(ctx, "b2", "k"); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
	for _, bad := range [][2]string{{"", "k"}, {"a/b", "k"}, {"b", ""}} {
		if err := s.PutKV(ctx, bad[0], bad[1], nil); !apierrors.IsBadRequest(err) {
			t.Fatalf("put %q: %v", bad, err)
		}
	}
	if s.CurrentRV() != rv {
		t.Fatalf("side table moved the resourceVersion: %d → %d", rv, s.CurrentRV())
	}
}

func TestTakeKVSingleUseUnderConcurrency(t *testing.T) {
	s := storetest.Open(t, store.Options{})
	for round := range 5 {
		key := "token"
		val := []byte{byte(round), 1, 2, 3}
		if err := s.PutKV(ctxT(t), "launch", key, val); err != nil {
			t.Fatal(err)
		}
		var wins, notFound atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				v, err := s.TakeKV(ctxT(t), "launch", key)
				switch {
				case err == nil && bytes.Equal(v, val):
					wins.Add(1)
				case apierrors.IsNotFound(err):
					notFound.Add(1)
				default:
					t.Errorf("take: %q %v", v, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 || notFound.Load() != 99 {
			t.Fatalf("round %d: wins=%d notFound=%d", round, wins.Load(), notFound.Load())
		}
	}
}

func TestScanKVAndLastKV(t *testing.T) {
	s := storetest.Open(t, store.Options{})
	ctx := ctxT(t)
	for _, k := range []string{"c1/0003", "c1/0001", "c1/0002", "c10/0001", "c2/0001"} {
		if err := s.PutKV(ctx, "log", k, []byte("v:"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutKV(ctx, "other", "c1/0009", []byte("x")); err != nil {
		t.Fatal(err)
	}
	keys := func(kvs []store.KV) string {
		var out []string
		for _, kv := range kvs {
			if string(kv.Value) != "v:"+kv.Key {
				t.Fatalf("value of %s = %q", kv.Key, kv.Value)
			}
			out = append(out, kv.Key)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		name, prefix, from string
		limit              int
		want               string
	}{
		{"prefix", "c1/", "", 0, "c1/0001,c1/0002,c1/0003"},
		{"from", "c1/", "c1/0002", 0, "c1/0002,c1/0003"},
		{"limit", "c1/", "", 2, "c1/0001,c1/0002"},
		{"from past prefix", "c1/", "c2", 0, ""},
		{"whole bucket", "", "", 0, "c1/0001,c1/0002,c1/0003,c10/0001,c2/0001"},
	} {
		t.Run(c.name, func(t *testing.T) {
			kvs, err := s.ScanKV(ctx, "log", c.prefix, c.from, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(kvs); got != c.want {
				t.Fatalf("got %q want %q", got, c.want)
			}
		})
	}
	last, ok, err := s.LastKV(ctx, "log", "c1/")
	if err != nil || !ok || last.Key != "c1/0003" {
		t.Fatalf("last: %v %v %v", last, ok, err)
	}
	if _, ok, err := s.LastKV(ctx, "log", "c3/"); err != nil || ok {
		t.Fatalf("last of empty prefix: %v %v", ok, err)
	}
	if _, err := s.ScanKV(ctx, "a/b", "", "", 0); !apierrors.IsBadRequest(err) {
		t.Fatalf("bad bucket: %v", err)
	}
}

// TestPutKVsWritesAllOrNothing checks that PutKVs stores values of several buckets together, and that one bad
// key refuses the whole write.
func TestPutKVsWritesAllOrNothing(t *testing.T) {
	s := storetest.Open(t, store.Options{})
	ctx := ctxT(t)
	if err := s.PutKVs(ctx, store.KVPut{Bucket: "a", Key: "1", Value: []byte("x")}, store.KVPut{Bucket: "b", Key: "2", Value: []byte("y")}); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][3]string{{"a", "1", "x"}, {"b", "2", "y"}} {
		if v, err := s.GetKV(ctx, kv[0], kv[1]); err != nil || string(v) != kv[2] {
			t.Fatalf("%s/%s = %q %v, want %q", kv[0], kv[1], v, err, kv[2])
		}
	}
	if err := s.PutKVs(ctx, store.KVPut{Bucket: "a", Key: "3", Value: []byte("z")}, store.KVPut{Bucket: "b", Key: ""}); !apierrors.IsBadRequest(err) {
		t.Fatalf("a write with an empty key: %v, want BadRequest", err)
	}
	if _, err := s.GetKV(ctx, "a", "3"); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused PutKVs wrote its valid part: %v", err)
	}
}
