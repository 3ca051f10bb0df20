//go:build e2e

package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/transcript/transcriptwire"

	. "github.com/onsi/gomega"
)

// These benchmarks need the Ginkgo suite's Docker client, so they run as Go
// benchmarks that set it up themselves: go test -tags e2e -run '^$' -bench Conversation ./e2e/

// useBenchSuite points the suite-wide state at the benchmarks' suite (the
// Ginkgo BeforeSuite does not run for Go benchmarks).
func useBenchSuite(b *testing.B) {
	s, _ := benchSetup(b)
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	suite = s
}

// benchSupervisor starts a supervisor with Gomega wired to the benchmark.
func benchSupervisor(b *testing.B, dataDir string) *supervisorProc {
	RegisterTestingT(b)
	return startSupervisor(context.Background(), dataDir)
}

// BenchmarkConversationReadoption50 runs 50 live fake conversations, kills the
// supervisor with SIGKILL, restarts it and reports how long until every one
// is either re-adopted (its guest answers through the API again) or Paused.
func BenchmarkConversationReadoption50(b *testing.B) {
	useBenchSuite(b)
	ctx := context.Background()
	for range b.N {
		dataDir := b.TempDir()
		sup := benchSupervisor(b, dataDir)
		convs := make([]string, 50)
		for i := range convs {
			sup.apply(ctx, fakeAgent(fmt.Sprintf("bench-%d", i)))
			convs[i] = sup.start(ctx, fmt.Sprintf("bench-%d", i))
		}
		for _, c := range convs {
			sup.waitState(ctx, c, "Active", "IDLE", 5*time.Minute)
		}
		sup.kill9()
		restart := time.Now()
		sup = benchSupervisor(b, dataDir)
		pending := map[string]bool{}
		for _, c := range convs {
			pending[c] = true
		}
		for len(pending) > 0 && time.Since(restart) < 2*time.Minute {
			for c := range pending {
				if liveOrPaused(ctx, sup, c) {
					delete(pending, c)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		b.ReportMetric(time.Since(restart).Seconds(), "s-to-all-readopted")
		b.ReportMetric(float64(len(pending)), "not-readopted")
		sup.stop()
		sup.removeContainers(ctx)
	}
}

func liveOrPaused(ctx context.Context, sup *supervisorProc, conv string) bool {
	if _, err := sup.client.DoRaw(ctx, "GET", client.ResourcePath("conversations", "default", conv, "screen"), "", nil); err == nil {
		return true
	}
	obj, err := sup.client.Get(ctx, "conversations", "default", conv)
	return err == nil && field(obj, "status", "state") == "Paused"
}

// BenchmarkConversationTurnLatency measures sendMessage → the agent's reply
// arriving on the transcript subscription, with the fake CLI answering at
// once, and the supervisor's share: from the CLI's own timestamp of the reply
// to its delivery.
func BenchmarkConversationTurnLatency(b *testing.B) {
	useBenchSuite(b)
	ctx := context.Background()
	sup := benchSupervisor(b, b.TempDir())
	defer func() { sup.stop(); sup.removeContainers(ctx) }()
	sup.apply(ctx, `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"fast","namespace":"default"},"spec":{"harness":"fake","env":[{"name":"AICLI_FAKE_DELAY","value":"0s"}]}}`)
	conv := sup.start(ctx, "fast")
	sup.waitState(ctx, conv, "Active", "IDLE", 5*time.Minute)

	resp, err := sup.client.Do(ctx, "GET", client.ResourcePath("conversations", "default", conv, "transcript")+"?follow=true", "", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	entries := make(chan transcriptwire.Entry, 16)
	var once sync.Once
	go func() {
		defer once.Do(func() { close(entries) })
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var e transcriptwire.Entry
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				entries <- e
			}
		}
	}()
	var total, share []time.Duration
	b.ResetTimer()
	for i := range b.N {
		text := fmt.Sprintf("ping %d", i)
		start := time.Now()
		for {
			if err := sup.send(ctx, conv, text); err == nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		for e := range entries {
			if e.Speaker == transcriptwire.SpeakerAgent && e.Text == fmt.Sprintf("fake[turn %d]: %s", i+1, text) {
				now := time.Now()
				total = append(total, now.Sub(start))
				share = append(share, now.Sub(e.Time))
				break
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(ms(pct(total, 50)), "p50-ms")
	b.ReportMetric(ms(pct(total, 99)), "p99-ms")
	b.ReportMetric(ms(pct(share, 50)), "supervisor-share-p50-ms")
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
