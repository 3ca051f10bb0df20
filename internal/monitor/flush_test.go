package monitor

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// TestMovingCursorIsWrittenWhenQuietOrLate drives the flush by hand (the
// service's own tick is an hour) with a fake clock: a cursor that keeps
// moving is not written on each tick, it is written on the first tick that
// finds its target quiet, or once it has been unwritten for MaxFlushDelay;
// the final flush writes whatever moved.
func TestMovingCursorIsWrittenWhenQuietOrLate(t *testing.T) {
	e := newEnv(t, v1alpha1.MonitorAdvise, substring("panic"))
	var mu sync.Mutex
	clock := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.svc = &Service{Client: e.c, Watch: e.st, Transcripts: e.log, Guests: e.guests, Attribution: e.attrib,
		Logger: slog.New(slog.DiscardHandler), Now: now, FlushInterval: time.Hour, MaxFlushDelay: 10 * time.Second,
		Resync: 100 * time.Millisecond, Poll: 5 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); _ = e.svc.Run(ctx) }()
	e.eventually("following w1", func() bool {
		e.svc.mu.Lock()
		defer e.svc.mu.Unlock()
		return len(e.svc.follows) == 1
	})
	var last int64
	step := func(n int) { // n hit-less entries, evaluated
		t.Helper()
		for range n {
			e.append(transcriptwire.SpeakerAgent, "all good")
			last++
		}
		e.eventually("entries evaluated", func() bool {
			e.svc.mu.Lock()
			defer e.svc.mu.Unlock()
			for _, st := range e.svc.atts {
				st.mu.Lock()
				defer st.mu.Unlock()
				return st.evaluated["w1"] == last
			}
			return false
		})
	}
	tick := func() { advance(time.Second); e.svc.flush(ctxT(t), false) }

	step(3)
	tick() // moved since the last tick: not written
	step(2)
	tick()
	if c := e.cursor(); c != 0 {
		t.Fatalf("cursor written while its target kept moving: %d", c)
	}
	tick() // quiet
	if c := e.cursor(); c != 5 {
		t.Fatalf("cursor after a quiet tick = %d, want 5", c)
	}
	for range 10 { // moving on every tick; first seen moving at the first of these ticks, 9 s before the last
		step(1)
		tick()
	}
	if c := e.cursor(); c != 5 {
		t.Fatalf("cursor written before MaxFlushDelay: %d", c)
	}
	step(1)
	tick() // 10 s since the tick that first saw it moving
	if c := e.cursor(); c != last {
		t.Fatalf("cursor after MaxFlushDelay = %d, want %d", c, last)
	}
	step(2)
	cancel() // the final flush writes what moved
	<-done
	if c := e.cursor(); c != last {
		t.Fatalf("cursor after the final flush = %d, want %d", c, last)
	}
}
