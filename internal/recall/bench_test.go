package recall

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"aicli.dev/aicli/internal/textsearch/textsearchtest"
)

var benchWords = textsearchtest.Words

func benchDocs(n int, seed uint64) []Doc {
	rng := rand.New(rand.NewPCG(seed, 1))
	z := rand.NewZipf(rng, 1.1, 4, uint64(len(benchWords)-1))
	docs := make([]Doc, n)
	for i := range docs {
		var body strings.Builder
		for range 60 + rng.IntN(120) {
			body.WriteString(benchWords[z.Uint64()])
			body.WriteByte(' ')
		}
		docs[i] = Doc{
			ID:    fmt.Sprintf("doc-%06d", i),
			Title: benchWords[rng.IntN(len(benchWords))] + " " + benchWords[rng.IntN(len(benchWords))],
			Body:  body.String(),
		}
	}
	return docs
}

// BenchmarkRecallIndex measures end-to-end indexing throughput: PutMany in
// batches of 1,000 (synced side-table writes plus the bleve batches). The
// sub-benchmarks add the optimisations one at a time over a same-run
// baseline (bleve's defaults, store then index, one batch).
func BenchmarkRecallIndex(b *testing.B) {
	for _, v := range []struct {
		name string
		tune tuning
	}{
		{"baseline", tuning{safeBatch: true, serialStore: true, subBatches: 1, withAll: true, unicodeTokenizer: true}},
		{"unsafe_batch", tuning{serialStore: true, subBatches: 1, withAll: true, unicodeTokenizer: true}},
		{"+overlap_store", tuning{subBatches: 1, withAll: true, unicodeTokenizer: true}},
		{"+no_all_field", tuning{subBatches: 1, unicodeTokenizer: true}},
		{"+ascii_tokenizer", tuning{subBatches: 1}},
		{"+2_sub_batches", tuning{subBatches: 2}},
	} {
		b.Run(v.name, func(b *testing.B) { benchIndex(b, Options{tune: v.tune}) })
	}
}

func benchIndex(b *testing.B, opts Options) {
	const batch = 1000
	docs := benchDocs(10_000, 7)
	r := newEnv(b).openWith(b, opts)
	ctx := context.Background()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	n := 0
	for b.Loop() {
		i := n % len(docs)
		if _, err := r.PutMany(ctx, testRef, docs[i:i+batch]); err != nil {
			b.Fatal(err)
		}
		n += batch
	}
	// Include persisting what was indexed, as a batch that waits does.
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "docs/s")
	// The machine may be shared: docs per CPU-second of this process is
	// the figure that does not depend on what else runs.
	b.ReportMetric(float64(n)/(cpuTime(b)-cpu0).Seconds(), "docs/cpu-s")
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRecallSearch measures search latency over a 10,000-document
// bucket with a mix of term, two-term, phrase, +/- and field queries; it
// reports p50 and p99.
func BenchmarkRecallSearch(b *testing.B) {
	r := newEnv(b).open(b)
	ctx := context.Background()
	docs := benchDocs(10_000, 7)
	for i := 0; i < len(docs); i += 1000 {
		if _, err := r.PutMany(ctx, testRef, docs[i:i+1000]); err != nil {
			b.Fatal(err)
		}
	}
	queries := []string{"container", "running supervisor", `"durable snapshot"`,
		"+docker -network", "title:agent", "latency throughput queue", "migrations"}
	var lat []time.Duration
	b.ResetTimer()
	i := 0
	for b.Loop() {
		start := time.Now()
		if _, err := r.Search(ctx, testRef, queries[i%len(queries)], 10); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
