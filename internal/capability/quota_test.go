package capability

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestQuotaHoldsCap(t *testing.T) {
	for _, n := range []int{1, 7, 100, 999, 1000, 5000} {
		q := NewQuota()
		allowed := 0
		for i := range 1000 {
			if q.Allow("tok", n, t0.Add(time.Duration(i)*time.Millisecond)) {
				allowed++
			}
		}
		if want := min(n, 1000); allowed != want {
			t.Errorf("cap %d: %d of 1000 allowed, want %d", n, allowed, want)
		}
	}
}

func TestQuotaWindowSlides(t *testing.T) {
	q := NewQuota()
	t0 := t0.Truncate(time.Minute) // buckets are whole minutes
	// 10 calls spread over the first 50 minutes use up a cap of 10.
	for i := range 10 {
		if !q.Allow("k", 10, t0.Add(time.Duration(i*5)*time.Minute)) {
			t.Fatalf("call %d refused", i)
		}
	}
	tests := []struct {
		at   time.Duration
		want bool
	}{
		{50 * time.Minute, false},
		{59*time.Minute + 59*time.Second, false},
		{60 * time.Minute, true},  // the minute-0 call left the window
		{61 * time.Minute, false}, // and its slot was taken again
		{65 * time.Minute, true},  // the minute-5 call left
	}
	for _, tt := range tests {
		if got := q.Allow("k", 10, t0.Add(tt.at)); got != tt.want {
			t.Errorf("at +%s: %v, want %v", tt.at, got, tt.want)
		}
	}
	if !q.Allow("other", 1, t0) || q.Allow("other", 1, t0) {
		t.Error("keys are not independent")
	}
	for range 100 {
		if !q.Allow("free", 0, t0) || !q.Allow("free", -1, t0) {
			t.Fatal("no cap refused")
		}
	}
}

func TestQuotaEvictsIdleKeys(t *testing.T) {
	q := NewQuota()
	for i := range 1000 {
		q.Allow(fmt.Sprint("k", i), 5, t0)
	}
	if q.Len() != 1000 {
		t.Fatalf("%d keys", q.Len())
	}
	q.Allow("late", 5, t0.Add(30*time.Minute))
	if q.Len() != 1001 {
		t.Fatalf("evicted too early: %d keys", q.Len())
	}
	q.Allow("later", 5, t0.Add(61*time.Minute))
	if q.Len() != 2 {
		t.Fatalf("after an hour idle: %d keys, want 2", q.Len())
	}
}

func TestQuotaConcurrent(t *testing.T) {
	q := NewQuota()
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				if q.Allow("shared", 123, t0) {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if allowed.Load() != 123 {
		t.Fatalf("%d allowed, want 123", allowed.Load())
	}
}
