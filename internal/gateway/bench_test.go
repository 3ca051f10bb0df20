package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/guest/sidechannel"
	"aicli.dev/aicli/internal/gateway"
)

var quiet = slog.New(slog.DiscardHandler)

// memoryTarget is the brief's budget for supervisor memory per live guest connection.
const memoryTarget = 2 << 20

// memPerConn prepares n conversations, connects n guests, makes one request on each, and returns this process's
// heap growth and heap+stack growth per live connection. With inProcess=false the guests run in a helper process,
// so the numbers are the supervisor side alone; with inProcess=true they include both ends.
func memPerConn(tb testing.TB, n int, inProcess bool) (heapPer, totalPer float64) {
	tb.Helper()
	store := newMemStore()
	g, err := gateway.New(gateway.Options{DataDir: tb.TempDir(), Tokens: store, Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = g.Close() })
	before := settledMem()

	boots := make([]sidechannel.Bootstrap, n)
	for i := range n {
		l, err := g.Prepare(context.Background(), fmt.Sprintf("m%03d", i))
		if err != nil {
			tb.Fatal(err)
		}
		boots[i] = hostBootstrap(l)
	}
	if inProcess {
		for _, b := range boots {
			s, err := sidechannel.Dial(context.Background(), b, quiet)
			if err != nil {
				tb.Fatal(err)
			}
			srv := &http.Server{Handler: echoHandler(b.ConversationID)}
			go func() { _ = srv.Serve(s) }()
			tb.Cleanup(func() { _ = srv.Close() })
		}
	} else {
		startGuestFleet(tb, boots)
	}
	for i := range n {
		conv := fmt.Sprintf("m%03d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		gc, err := g.WaitGuest(ctx, conv)
		cancel()
		if err != nil {
			tb.Fatal(err)
		}
		resp, err := gc.HTTPClient().Get(gateway.BaseURL + "/m")
		if err != nil {
			tb.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if string(body) != "guest "+conv+" /m" {
			tb.Fatalf("reply %q", body)
		}
	}
	if st := g.Stats(); st.Live != n {
		tb.Fatalf("live %d, want %d", st.Live, n)
	}
	after := settledMem()
	runtime.KeepAlive(boots)
	heapPer = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
	totalPer = float64(int64(after.HeapAlloc+after.StackInuse)-int64(before.HeapAlloc+before.StackInuse)) / float64(n)
	return heapPer, totalPer
}

// startGuestFleet runs guestFleet in a child process (this test binary) for boots and waits until all dialed.
func startGuestFleet(tb testing.TB, boots []sidechannel.Bootstrap) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = stdin.Close() // the helper exits when its stdin closes
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill() // our own child, by PID
			<-done
		}
	})
	data, err := json.Marshal(boots)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := stdin.Write(append(data, '\n')); err != nil {
		tb.Fatal(err)
	}
	status, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(status) != "ready" {
		tb.Fatalf("guest fleet: %q %v", status, err)
	}
}

func settledMem() runtime.MemStats {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m
}

// TestMemoryPerConnection holds the gateway to its memory budget with 200 live guests.
func TestMemoryPerConnection(t *testing.T) {
	heapPer, totalPer := memPerConn(t, 200, false)
	t.Logf("supervisor memory per live guest connection: heap %.1f KiB, heap+stacks %.1f KiB", heapPer/1024, totalPer/1024)
	if totalPer > memoryTarget {
		t.Fatalf("%.0f bytes per connection, budget %d", totalPer, memoryTarget)
	}
}

// BenchmarkMemoryPerConnection reports the same measurement as metrics (run with -benchtime=1x): guests in a helper
// process (supervisor side only) and guests in-process (both ends).
func BenchmarkMemoryPerConnection(b *testing.B) {
	for _, inProcess := range []bool{false, true} {
		name := "guests=subprocess"
		if inProcess {
			name = "guests=in-process"
		}
		b.Run(name, func(b *testing.B) {
			var heapPer, totalPer float64
			for range b.N {
				heapPer, totalPer = memPerConn(b, 200, inProcess)
			}
			b.ReportMetric(heapPer, "heap-B/conn")
			b.ReportMetric(totalPer, "heap+stack-B/conn")
		})
	}
}

// BenchmarkRoundTrip measures one small HTTP request/response from supervisor to guest over the side channel.
func BenchmarkRoundTrip(b *testing.B) {
	e := newBenchEnv(b)
	gc := e.connect(b, "conv-bench")
	client := gc.HTTPClient()
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		resp, err := client.Get(gateway.BaseURL + "/rt")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkRoundTripParallel measures concurrent requests multiplexed on one guest connection.
func BenchmarkRoundTripParallel(b *testing.B) {
	e := newBenchEnv(b)
	client := e.connect(b, "conv-par").HTTPClient()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(gateway.BaseURL + "/rt")
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	})
}

type benchEnv struct{ g *gateway.Gateway }

func newBenchEnv(b *testing.B) *benchEnv {
	g, err := gateway.New(gateway.Options{DataDir: b.TempDir(), Tokens: newMemStore(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Close() })
	return &benchEnv{g: g}
}

func (e *benchEnv) connect(b *testing.B, conv string) *gateway.GuestConn {
	l, err := e.g.Prepare(context.Background(), conv)
	if err != nil {
		b.Fatal(err)
	}
	s, err := sidechannel.Dial(context.Background(), hostBootstrap(l), quiet)
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: echoHandler(conv)}
	go func() { _ = srv.Serve(s) }()
	b.Cleanup(func() { _ = srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gc, err := e.g.WaitGuest(ctx, conv)
	if err != nil {
		b.Fatal(err)
	}
	return gc
}
