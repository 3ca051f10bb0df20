package tools_test

import (
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/internal/tools"
)

// BenchmarkToolCallRoundTrip measures one mounted-tool call end to end in-process — caller → guest relay socket →
// side-channel stream over the real gateway session → router → tool server → exec of `true` → exit code back —
// against the tool server alone (over an in-memory pipe) and running `true` directly with os/exec. Each reports
// p50 and p99 per call.
func BenchmarkToolCallRoundTrip(b *testing.B) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true on PATH")
	}
	b.Run("tool", func(b *testing.B) {
		st := newStack(b, &fakeAuth{tools: map[string]*tools.Authorization{"t": execTool("t", truePath)}})
		relayCall(b, st.socket, "t") // warm up the session
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			if code := relayCall(b, st.socket, "t"); code != 0 {
				b.Fatalf("exit %d", code)
			}
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
	b.Run("server-only", func(b *testing.B) { // the tool server over an in-memory pipe: no relay, no side channel
		s, _ := newServer(b, &fakeAuth{tools: map[string]*tools.Authorization{"t": execTool("t", truePath)}})
		lat := make([]time.Duration, 0, b.N)
		for range b.N {
			start := time.Now()
			if r := call(b, s, "t", ""); r.exit.Code != 0 {
				b.Fatalf("exit %+v", r.exit)
			}
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
	// 50 calls at once from 5 conversations (five guest sessions, ten callers each), round after round.
	b.Run("parallel-5x10", func(b *testing.B) {
		var stacks []*stack
		for range 5 {
			st := newStack(b, &fakeAuth{tools: map[string]*tools.Authorization{"t": execTool("t", truePath)}})
			relayCall(b, st.socket, "t")
			stacks = append(stacks, st)
		}
		var mu sync.Mutex
		lat := make([]time.Duration, 0, 50*b.N)
		b.ResetTimer()
		for range b.N {
			var wg sync.WaitGroup
			for _, st := range stacks {
				for range 10 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						start := time.Now()
						if code := relayCall(b, st.socket, "t"); code != 0 {
							b.Errorf("exit %d", code)
						}
						d := time.Since(start)
						mu.Lock()
						lat = append(lat, d)
						mu.Unlock()
					}()
				}
			}
			wg.Wait()
		}
		reportPercentiles(b, lat)
	})
	// The same-run baseline of parallel-5x10: 50 direct execs of `true` at once.
	b.Run("direct-parallel-50", func(b *testing.B) {
		var mu sync.Mutex
		lat := make([]time.Duration, 0, 50*b.N)
		for range b.N {
			var wg sync.WaitGroup
			for range 50 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					if err := exec.Command(truePath).Run(); err != nil {
						b.Error(err)
					}
					d := time.Since(start)
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}()
			}
			wg.Wait()
		}
		reportPercentiles(b, lat)
	})
	b.Run("direct", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for range b.N {
			start := time.Now()
			if err := exec.Command(truePath).Run(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(p(0.50), "p50-µs")
	b.ReportMetric(p(0.99), "p99-µs")
}
