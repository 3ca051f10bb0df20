package store_test

import (
	"bytes"
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
