package egress_test

import (
	"context"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/internal/egress"
)

// TestStreamFloodIsBounded: a guest opens 240 egress streams at once (below the gateway's per-guest stream bound,
// past which it would be disconnected instead) to an allowed target that holds every
// connection open. Exactly MaxStreamsPerConversation are admitted (and dialed); the rest are refused at once with
// too_many_streams (reported once), the supervisor's goroutines stay bounded, and once the admitted streams end
// the conversation can open new ones.
func TestStreamFloodIsBounded(t *testing.T) {
	const limit, total = 16, 240
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = target.Close() })
	var held sync.Map
	go func() {
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			held.Store(c, true)
		}
	}()
	e := newEnv(t, egress.Options{MaxStreamsPerConversation: limit})
	e.policy(t, "", target.Addr().String())
	base := runtime.NumGoroutine()

	hdr := frame(`{"kind":"proxy","target":"` + target.Addr().String() + `"}`)
	type result struct {
		st  net.Conn
		rep egresswire.Reply
		err error
	}
	results := make(chan result, total)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range total {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := e.out.Open(ctx)
			if err != nil {
				results <- result{err: err}
				return
			}
			_ = st.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := st.Write(hdr); err != nil {
				results <- result{st: st, err: err}
				return
			}
			var rep egresswire.Reply
			err = egresswire.ReadFrame(st, &rep)
			results <- result{st: st, rep: rep, err: err}
		}()
	}
	wg.Wait()
	close(results)
	var admitted []net.Conn
	refused := 0
	for r := range results {
		switch {
		case r.err != nil:
			t.Errorf("stream: %v", r.err)
		case r.rep.OK:
			admitted = append(admitted, r.st)
		case r.rep.Reason == egresswire.ReasonTooManyStreams:
			refused++
			_ = r.st.Close()
		default:
			t.Errorf("unexpected reply %+v", r.rep)
		}
	}
	if len(admitted) != limit || refused != total-limit {
		t.Fatalf("admitted %d refused %d, want %d and %d", len(admitted), refused, limit, total-limit)
	}
	st := e.server.Stats()
	if st.Active != limit || st.Admitted != limit || st.Refused[egresswire.ReasonTooManyStreams] != total-limit {
		t.Fatalf("stats %+v", st)
	}
	waitFor(t, "the target to see the admitted connections", func() bool {
		n := 0
		held.Range(func(any, any) bool { n++; return true })
		return n == limit
	})
	if got := len(e.dials.all()); got != limit {
		t.Fatalf("dialed %d times, want %d", got, limit)
	}
	if reps := e.denials.all(); len(reps) != 1 || reps[0].reason[:len("too_many_streams")] != "too_many_streams" {
		t.Fatalf("reports %v: a flood is reported once", reps)
	}
	// Refused streams leave nothing behind: about three goroutines per admitted tunnel (two copiers, the stream
	// handler) plus a few, not one per refused stream.
	waitFor(t, "refused streams' goroutines to end", func() bool { return runtime.NumGoroutine() <= base+4*limit+20 })

	for _, c := range admitted {
		_ = c.Close()
	}
	held.Range(func(k, _ any) bool { _ = k.(net.Conn).Close(); return true })
	waitFor(t, "admitted streams to end", func() bool { return e.server.Stats().Active == 0 })
	rep, err := rawStream(t, e, hdr)
	if err != nil || !rep.OK {
		t.Fatalf("after the flood: %+v %v", rep, err)
	}
}
