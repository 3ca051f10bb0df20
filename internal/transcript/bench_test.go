package transcript

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// BenchmarkSubscriptionDelivery measures commit → subscriber delivery of
// transcript entries (synced appends, one subscriber per conversation) and
// reports p50/p99 latency.
func BenchmarkSubscriptionDelivery(b *testing.B) {
	st, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	log := &StoreLog{Store: st}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub, err := log.Subscribe(ctx, "bench", 1)
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if _, err := log.Append(ctx, "bench", []transcriptwire.Entry{{Speaker: transcriptwire.SpeakerAgent, Text: fmt.Sprint("reply ", i), Time: start}}); err != nil {
			b.Fatal(err)
		}
		committed := time.Now()
		<-sub
		lat = append(lat, time.Since(committed))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkAppendNative measures one synced append of an entry carrying the CLI's entry id (what the pump writes
// for every entry), with the duplicate check, over a conversation that already holds 10,000 entries.
func BenchmarkAppendNative(b *testing.B) {
	st, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	log := &StoreLog{Store: st}
	ctx := context.Background()
	const held = 10000
	batch := make([]transcriptwire.Entry, 0, held)
	for i := range held {
		batch = append(batch, transcriptwire.Entry{Speaker: transcriptwire.SpeakerAgent, Text: fmt.Sprint("old ", i), NativeID: fmt.Sprintf("old-%08d", i)})
	}
	if _, err := log.Append(ctx, "bench", batch); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := log.Append(ctx, "bench", []transcriptwire.Entry{{Speaker: transcriptwire.SpeakerAgent, Text: fmt.Sprint("reply ", i), NativeID: fmt.Sprintf("new-%08d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
}
