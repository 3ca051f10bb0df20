package history

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/internal/textsearch/textsearchtest"

	"github.com/blevesearch/bleve/v2"

	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/transcript"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// The benchmark corpus: benchAgents agents of namespace "bench", each with
// benchConvs conversations; entries of 5–60 words drawn with a Zipf
// distribution from benchWords followed by synthetic words (a long tail),
// speakers human 20 %, agent 50 %, tool 25 %, mail:peer 5 %, one second
// apart. corpusVersion names the cached fixture; bump it when this changes.
const (
	benchAgents   = 100
	benchConvs    = 10
	corpusVersion = "c2"
)

var benchWords = textsearchtest.Words

// vocabulary is benchWords then 20,000 synthetic words.
func vocabulary() []string {
	rng := rand.New(rand.NewPCG(3, 3))
	words := slices.Clone(benchWords)
	for range 20_000 {
		b := make([]byte, 3+rng.IntN(8))
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		words = append(words, string(b))
	}
	return words
}

type corpus struct {
	n     int
	words []string
}

func (c corpus) uid(agent, conv int) string { return fmt.Sprintf("uid-%03d-%02d", agent, conv) }

func (c corpus) resolve(_ context.Context, uid string) (Conversation, bool, error) {
	var a, v int
	if _, err := fmt.Sscanf(uid, "uid-%03d-%02d", &a, &v); err != nil {
		return Conversation{}, false, nil
	}
	return Conversation{Namespace: "bench", Agent: fmt.Sprintf("agent-%03d", a), Name: fmt.Sprintf("agent-%03d-%02d", a, v)}, true, nil
}

// entries generates conversation (agent, conv)'s transcript.
func (c corpus) entries(agent, conv int) []transcriptwire.Entry {
	per := c.n / (benchAgents * benchConvs)
	rng := rand.New(rand.NewPCG(uint64(agent), uint64(conv)))
	z := rand.NewZipf(rng, 1.07, 2, uint64(len(c.words)-1))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]transcriptwire.Entry, per)
	for i := range out {
		var text strings.Builder
		for j := range 5 + rng.IntN(56) {
			if j > 0 {
				text.WriteByte(' ')
			}
			text.WriteString(c.words[z.Uint64()])
		}
		speaker := "agent"
		switch r := rng.IntN(100); {
		case r < 20:
			speaker = "human"
		case r < 45:
			speaker = "tool"
		case r < 50:
			speaker = "mail:peer"
		}
		at := base.Add(time.Duration(i*benchAgents*benchConvs+agent*benchConvs+conv) * time.Second)
		out[i] = transcriptwire.Entry{Cursor: int64(i + 1), Speaker: speaker, Text: text.String(), Time: at}
	}
	return out
}

// fixture is a store holding the corpus's transcripts and a caught-up index.
type fixture struct {
	st        *store.Store
	ix        *Index
	c         corpus
	indexRate float64 // entries/s of the rebuild that built the index
	mem       []memEntry
}

// memEntry is the in-memory linear-scan baseline's copy of an entry.
type memEntry struct {
	agent, speaker, lower string
	at                    time.Time
}

var (
	fixturesMu sync.Mutex
	fixtures   = map[int]*fixture{}
)

// loadFixture builds the corpus of n entries once per process, under
// $TMPDIR/aicli-history-bench-<n>-<versions> so that later runs reuse it
// (delete the directory to rebuild).
func loadFixture(b *testing.B, n int) *fixture {
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	if f := fixtures[n]; f != nil {
		return f
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("aicli-history-bench-%d-%s-%s", n, corpusVersion, mappingVersion))
	done := filepath.Join(dir, "complete.json")
	c := corpus{n: n, words: vocabulary()}
	var meta struct{ IndexRate float64 }
	data, err := os.ReadFile(done)
	if err == nil {
		err = json.Unmarshal(data, &meta)
	}
	fresh := err != nil
	if fresh {
		_ = os.RemoveAll(dir)
	}
	st, err := store.Open(filepath.Join(dir, "store"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if fresh {
		start := time.Now()
		writeCorpus(b, st, c)
		b.Logf("wrote %d entries to the store in %v", n, time.Since(start).Round(time.Millisecond))
	}
	start := time.Now()
	ix, err := Open(ctx, st, filepath.Join(dir, "history"), ResolverFunc(c.resolve), Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := ix.CatchUp(ctx); err != nil {
		b.Fatal(err)
	}
	if fresh {
		meta.IndexRate = float64(n) / time.Since(start).Seconds()
		b.Logf("indexed %d entries in %v (%.0f entries/s)", n, time.Since(start).Round(time.Millisecond), meta.IndexRate)
		data, _ := json.Marshal(meta)
		if err := os.WriteFile(done, data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	if count, _ := ix.ix.DocCount(); count != uint64(n) {
		b.Fatalf("index holds %d entries, want %d", count, n)
	}
	waitMerged(b, ix)
	f := &fixture{st: st, ix: ix, c: c, indexRate: meta.IndexRate}
	for a := range benchAgents {
		for v := range benchConvs {
			for _, e := range c.entries(a, v) {
				f.mem = append(f.mem, memEntry{agent: fmt.Sprintf("agent-%03d", a), speaker: e.Speaker,
					lower: strings.ToLower(e.Text), at: e.Time})
			}
		}
	}
	fixtures[n] = f
	return f
}

// waitMerged waits (at most 10 minutes) until bleve's background merger is
// idle: no merge running and the same number of segments for three seconds.
// A freshly built index keeps merging for minutes, taking a core from the
// searches measured; the supervisor's index is merged most of its life.
func waitMerged(b *testing.B, ix *Index) {
	start := time.Now()
	stat := func() (running bool, segments uint64) {
		m, _ := ix.ix.StatsMap()["index"].(map[string]any)
		beg, _ := m["TotFileMergeZapBeg"].(uint64)
		end, _ := m["TotFileMergeZapEnd"].(uint64)
		segments, _ = m["num_root_filesegments"].(uint64)
		return beg != end, segments
	}
	last, stable := uint64(0), 0
	for time.Since(start) < 10*time.Minute && stable < 3 {
		time.Sleep(time.Second)
		running, segments := stat()
		if running || segments != last {
			stable = 0
		} else {
			stable++
		}
		last = segments
	}
	b.Logf("index merged down to %d segments after waiting %v", last, time.Since(start).Round(time.Second))
}

// writeCorpus appends every conversation's transcript, 64 conversations at a
// time (their synced writes share the store's group commits).
func writeCorpus(b *testing.B, st *store.Store, c corpus) {
	log := &transcript.StoreLog{Store: st}
	var wg sync.WaitGroup
	work := make(chan [2]int)
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			for av := range work {
				es := c.entries(av[0], av[1])
				for i := 0; i < len(es); i += 500 {
					if _, err := log.Append(context.Background(), c.uid(av[0], av[1]), es[i:min(i+500, len(es))]); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	for a := range benchAgents {
		for v := range benchConvs {
			work <- [2]int{a, v}
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// benchQuery is one query of the mix, with its linear-scan equivalent.
type benchQuery struct {
	text, speaker string
	since         bool
	words         []string // all must occur (scan baseline)
}

func benchQueries(words []string) []benchQuery {
	rare := words[len(benchWords)+2_000] // a tail word: a handful of hits per agent
	return []benchQuery{
		{text: "agent", words: []string{"agent"}},     // the most common word
		{text: "latency", words: []string{"latency"}}, // mid-frequency
		{text: rare, words: []string{rare}},
		{text: "+docker +network", words: []string{"docker", "network"}},
		{text: `"container supervisor"`, words: []string{"container supervisor"}},
		{text: "deployed", speaker: "human", words: []string{"deployed"}},
		{text: "failed", since: true, words: []string{"failed"}},
		{speaker: "mail:peer"},
	}
}

func benchSearch(b *testing.B, n int) {
	if n >= 1_000_000 && os.Getenv("AICLI_BENCH_1M") != "1" {
		b.Skip("set AICLI_BENCH_1M=1 (make bench) to build and search 1M entries")
	}
	f := loadFixture(b, n)
	ctx := context.Background()
	queries := benchQueries(f.c.words)
	since := f.mem[len(f.mem)*9/10].at // the newest ~10 %
	rng := rand.New(rand.NewPCG(9, 9))
	// Warm up (page cache, bleve's segment caches): the supervisor's index
	// is warm most of its life.
	for j := range 3 * len(queries) {
		bq := queries[j%len(queries)]
		q := Query{Namespace: "bench", Targets: agents(fmt.Sprintf("agent-%03d", j%benchAgents)), Text: bq.text, Speaker: bq.speaker, Since: since}
		if _, err := f.ix.Search(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	var lat, raw, scan []time.Duration
	perQuery := make([][]time.Duration, len(queries))
	hits := 0
	b.ResetTimer()
	i := 0
	for b.Loop() {
		bq := queries[i%len(queries)]
		agent := fmt.Sprintf("agent-%03d", rng.IntN(benchAgents))
		q := Query{Namespace: "bench", Targets: agents(agent), Text: bq.text, Speaker: bq.speaker, Limit: 20}
		if bq.since {
			q.Since = since
		}
		start := time.Now()
		got, err := f.ix.Search(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		perQuery[i%len(queries)] = append(perQuery[i%len(queries)], lat[len(lat)-1])
		hits += len(got)

		// Baselines, same query: bleve alone (no hit materialisation) and a
		// linear scan of the entries in memory.
		b.StopTimer()
		bleveQ, _ := q.bleveQuery()
		req := bleve.NewSearchRequestOptions(bleveQ, 20, 0, false)
		if bq.text == "" {
			req.SortBy([]string{"-" + fieldTime})
		}
		start = time.Now()
		if _, err := f.ix.ix.SearchInContext(ctx, req); err != nil {
			b.Fatal(err)
		}
		raw = append(raw, time.Since(start))
		start = time.Now()
		scanMatches(f.mem, agent, bq, q.Since)
		scan = append(scan, time.Since(start))
		b.StartTimer()
		i++
	}
	for j, d := range perQuery {
		if len(d) > 0 {
			b.Logf("query %d %+v: p50 %.2f ms, p99 %.2f ms", j, queries[j], ms(pct(d, 50)), ms(pct(d, 99)))
		}
	}
	b.ReportMetric(ms(pct(lat, 50)), "p50-ms")
	b.ReportMetric(ms(pct(lat, 99)), "p99-ms")
	b.ReportMetric(ms(pct(raw, 50)), "bleve-p50-ms")
	b.ReportMetric(ms(pct(scan, 50)), "scan-p50-ms")
	b.ReportMetric(float64(hits)/float64(len(lat)), "hits/op")
	if f.indexRate > 0 {
		b.ReportMetric(f.indexRate, "index-entries/s")
	}
}

// scanMatches is the linear-scan baseline: every entry of agent matching
// the filters and containing all words (case-insensitive substrings).
func scanMatches(mem []memEntry, agent string, q benchQuery, since time.Time) int {
	n := 0
	for i := range mem {
		e := &mem[i]
		if e.agent != agent || (q.speaker != "" && e.speaker != q.speaker) || e.at.Before(since) {
			continue
		}
		ok := true
		for _, w := range q.words {
			if !strings.Contains(e.lower, w) {
				ok = false
				break
			}
		}
		if ok {
			n++
		}
	}
	return n
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkHistorySearch searches 100,000 entries (built once per machine,
// cached under $TMPDIR) with a mix of queries over one agent's history.
func BenchmarkHistorySearch(b *testing.B) { benchSearch(b, 100_000) }

// BenchmarkHistorySearch1M is the same over 1,000,000 entries; building
// them takes minutes, so it runs only with AICLI_BENCH_1M=1.
func BenchmarkHistorySearch1M(b *testing.B) { benchSearch(b, 1_000_000) }

// BenchmarkHistoryIndex measures indexing throughput from the transcript
// table (the rebuild / catch-up path) of 20,000 entries.
func BenchmarkHistoryIndex(b *testing.B) {
	const n = 20_000
	e := newEnv(b)
	c := corpus{n: n, words: vocabulary()}
	writeCorpus(b, e.st, c)
	ctx := context.Background()
	total := 0
	round := 0
	for b.Loop() {
		dir := filepath.Join(e.indexDir, fmt.Sprint(round))
		round++
		ix, err := Open(ctx, e.st, dir, ResolverFunc(c.resolve), Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := ix.CatchUp(ctx); err != nil {
			b.Fatal(err)
		}
		total += n
		b.StopTimer()
		_ = ix.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "entries/s")
}
