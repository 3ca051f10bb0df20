//go:build e2e

package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// monitorBenchColdPairs is how many target/monitor agent pairs give the cold
// samples (each pair's first wake creates its monitor conversation).
const monitorBenchColdPairs = 3

// BenchmarkMonitorWake measures a keyword entry committed to a live fake
// target conversation until the monitor's trigger message (speaker
// trigger:<attachment>) is committed to the monitor conversation, both seen
// as they arrive on the two transcripts' follow streams. Steady state: the
// monitor conversation is live and IDLE (one wake per iteration, each
// waiting untimed for both conversations to be IDLE again). Cold: the first
// wake of each of monitorBenchColdPairs pairs, which creates the monitor
// conversation (container start), reported but not held to the target.
// The same-run baseline is the human send that carries the keyword: the
// send request until its human entry arrives on the target's stream.
//
//	go test -tags e2e -run '^$' -bench MonitorWake -benchtime 30x ./e2e/
func BenchmarkMonitorWake(b *testing.B) {
	useBenchSuite(b)
	ctx := context.Background()
	sup := benchSupervisor(b, b.TempDir())
	defer func() { sup.stop(); sup.removeContainers(ctx) }()
	var cold []time.Duration
	var work, mon string
	var workStream, monStream <-chan arrival
	for i := range monitorBenchColdPairs {
		worker, watcher, att := fmt.Sprintf("worker-%d", i), fmt.Sprintf("watcher-%d", i), fmt.Sprintf("watch-%d", i)
		sup.apply(ctx, zeroDelayAgent(worker))
		sup.apply(ctx, zeroDelayAgent(watcher))
		sup.apply(ctx, benchAttachment(att, watcher, worker))
		w := sup.start(ctx, worker)
		sup.waitState(ctx, w, "Active", "IDLE", 5*time.Minute)
		ws := followTranscript(ctx, b, sup, w)
		if err := sup.send(ctx, w, "cold panic"); err != nil {
			b.Fatal(err)
		}
		hit := awaitEntry(b, ws, transcriptwire.SpeakerHuman, "cold panic")
		// The monitor conversation is named in the attachment's status when it
		// is created, long before its container is up and the trigger is sent.
		m := sup.monitorConversation(ctx, att, w)
		ms := followTranscript(ctx, b, sup, m)
		trig := awaitEntry(b, ms, "trigger:"+att, "")
		cold = append(cold, trig.at.Sub(hit.at))
		settle(ctx, b, sup, w, ws, m, ms)
		if i == 0 {
			work, mon, workStream, monStream = w, m, ws, ms
			continue
		}
		sup.setDesired(ctx, m, "Paused") // only the first pair stays live for the steady state
		sup.setDesired(ctx, w, "Paused")
	}
	var wake, send, total []time.Duration
	b.ResetTimer()
	for i := range b.N {
		text := fmt.Sprintf("steady panic %d", i)
		start := time.Now()
		if err := sup.send(ctx, work, text); err != nil {
			b.Fatal(err)
		}
		hit := awaitEntry(b, workStream, transcriptwire.SpeakerHuman, text)
		trig := awaitEntry(b, monStream, "trigger:watch-0", text)
		send = append(send, hit.at.Sub(start))
		wake = append(wake, trig.at.Sub(hit.at))
		total = append(total, trig.at.Sub(start))
		b.StopTimer()
		settle(ctx, b, sup, work, workStream, mon, monStream)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(ms(pct(wake, 50)), "wake-p50-ms")
	b.ReportMetric(ms(pct(wake, 99)), "wake-p99-ms")
	b.ReportMetric(ms(pct(send, 50)), "send-p50-ms")
	b.ReportMetric(ms(pct(send, 99)), "send-p99-ms")
	b.ReportMetric(ms(pct(total, 50)), "send-to-wake-p50-ms")
	b.ReportMetric(ms(pct(cold, 50)), "cold-wake-p50-ms")
	b.ReportMetric(ms(pct(cold, 100)), "cold-wake-max-ms")
}

// settle waits for the replies of the target and the monitor to the last
// message each got, then for both to be IDLE.
func settle(ctx context.Context, b *testing.B, sup *supervisorProc, work string, workStream <-chan arrival, mon string, monStream <-chan arrival) {
	b.Helper()
	awaitEntry(b, workStream, transcriptwire.SpeakerAgent, "")
	awaitEntry(b, monStream, transcriptwire.SpeakerAgent, "")
	sup.waitState(ctx, mon, "Active", "IDLE", time.Minute)
	sup.waitState(ctx, work, "Active", "IDLE", time.Minute)
}

// zeroDelayAgent is a fake agent that replies at once.
func zeroDelayAgent(name string) string {
	return strings.Replace(fakeAgent(name), `"50ms"`, `"0s"`, 1)
}

// benchAttachment watches target's human entries for "panic", with a rate
// backstop that never trips during a benchmark.
func benchAttachment(name, monitor, target string) string {
	var a map[string]any
	_ = json.Unmarshal([]byte(monitorAttachment(name, monitor, target, "panic", transcriptwire.SpeakerHuman)), &a)
	a["spec"].(map[string]any)["breaker"] = map[string]any{"rateBackstop": map[string]any{"wakes": 10000, "windowMinutes": 1}}
	out, _ := json.Marshal(a)
	return string(out)
}

// arrival is a transcript entry and when it arrived on a follow stream.
type arrival struct {
	transcriptwire.Entry
	at time.Time
}

// followTranscript streams conv's transcript from its beginning, stamping
// each entry on arrival; it ends with the benchmark.
func followTranscript(ctx context.Context, b *testing.B, sup *supervisorProc, conv string) <-chan arrival {
	b.Helper()
	ctx, cancel := context.WithCancel(ctx)
	b.Cleanup(cancel)
	resp, err := sup.client.Do(ctx, "GET", client.ResourcePath("conversations", "default", conv, "transcript")+"?follow=true", "", nil)
	if err != nil {
		b.Fatal(err)
	}
	out := make(chan arrival, 256)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			at := time.Now()
			var e transcriptwire.Entry
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				out <- arrival{Entry: e, at: at}
			}
		}
	}()
	return out
}

// awaitEntry returns the next entry of speaker whose text contains text.
func awaitEntry(b *testing.B, entries <-chan arrival, speaker, text string) arrival {
	b.Helper()
	timeout := time.After(3 * time.Minute)
	for {
		select {
		case e, ok := <-entries:
			if !ok {
				b.Fatalf("transcript stream ended before a %s entry with %q", speaker, text)
			}
			if e.Speaker == speaker && strings.Contains(e.Text, text) {
				return e
			}
		case <-timeout:
			b.Fatalf("no %s entry with %q within 3 minutes", speaker, text)
		}
	}
}
