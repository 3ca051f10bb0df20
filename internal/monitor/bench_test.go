package monitor

import (
	"context"
	"log/slog"
	"sort"
	"testing"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// BenchmarkWakeLatency measures a keyword entry appended to the target's
// transcript until its trigger message is sent to the (warm, IDLE) monitor
// conversation, with the service's default timing; it reports p50 and p99.
func BenchmarkWakeLatency(b *testing.B) {
	e := newEnvTB(b, v1alpha1.MonitorAdvise, substring("panic"))
	a := e.attachment()
	a.Spec.Breaker.RateBackstop.Wakes = 10000
	if err := e.c.Update(ctxT(b), a); err != nil {
		b.Fatal(err)
	}
	a = e.attachment()
	for i := range a.Status.Conditions {
		a.Status.Conditions[i].ObservedGeneration = a.Generation
	}
	if err := e.c.UpdateStatus(ctxT(b), a); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.svc = &Service{Client: e.c, Watch: e.st, Transcripts: e.log, Guests: e.guests, Attribution: e.attrib, Logger: slog.New(slog.DiscardHandler)}
	done := make(chan struct{})
	go func() { defer close(done); _ = e.svc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	wakes := func() int { return len(e.wakes()) }
	e.append(transcriptwire.SpeakerAgent, "panic") // creates the monitor conversation
	e.eventually("warm-up wake", func() bool { return wakes() == 1 })
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		time.Sleep(100 * time.Millisecond) // the previous turn ends (fake BUSY 30ms, then IDLE)
		start := time.Now()
		e.append(transcriptwire.SpeakerAgent, "another panic")
		for deadline := time.Now().Add(10 * time.Second); wakes() < i+2; {
			if time.Now().After(deadline) {
				b.Fatalf("wake %d not delivered; status %+v", i+2, e.attachment().Status)
			}
			time.Sleep(time.Millisecond)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
