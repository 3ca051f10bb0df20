package store_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/cockroachdb/pebble/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/store/storetest"
)

// benchWriters is the number of concurrent writers of the throughput pair.
const benchWriters = 64

// payload makes an object whose JSON form is about 600 bytes.
var payload = strings.Repeat("x", 400)

func benchObject(name string) *unstructured.Unstructured {
	return storetest.Object("Agent", "bench", name, map[string]interface{}{
		"harness": "fake", "model": "m", "persona": payload,
	})
}

// parallelism makes RunParallel use benchWriters goroutines.
func parallelism(b *testing.B) {
	p := benchWriters / max(1, runtimeProcs())
	b.SetParallelism(max(1, p))
}

// committedObject is the JSON of benchObject as the store commits it (with
// uid, creationTimestamp, generation and resourceVersion): the raw
// baselines write these bytes, so both sides of the ratio write the same
// object.
func committedObject(b *testing.B) []byte {
	s, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	o, err := s.Create(context.Background(), "agents", benchObject("o1234567"))
	if err != nil {
		b.Fatal(err)
	}
	js, err := json.Marshal(o.Object)
	if err != nil {
		b.Fatal(err)
	}
	return js
}

// BenchmarkRawPebbleSync64 is the baseline: each of 64 goroutines writes
// the committed object under its own key as one synced batch (pebble
// coalesces their fsyncs).
func BenchmarkRawPebbleSync64(b *testing.B) {
	val := committedObject(b)
	db, err := pebble.Open(b.TempDir(), &pebble.Options{MemTableSize: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var ctr atomic.Uint64
	parallelism(b)
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := []byte("o/agents/bench/" + strconv.FormatUint(ctr.Add(1), 10))
			if err := db.Set(k, val, pebble.Sync); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-us/write")
	fsyncStats(b, db)
}

// BenchmarkRawPebbleLayout64 is an informational second baseline: raw
// pebble writing, per write, the two keys the store commits for each
// Create (history record: an 11-byte header and the committed object;
// projection pointer) as one synced batch from each of 64 goroutines. The
// store's per-group keys (the watch-log entry and m/rv, one each per group
// of ~12 writes here) are left out. It separates what the key layout costs
// in pebble from what the store's code costs.
func BenchmarkRawPebbleLayout64(b *testing.B) {
	obj := committedObject(b)
	db, err := pebble.Open(b.TempDir(), &pebble.Options{MemTableSize: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rec := append(make([]byte, 11), obj...)
	var ctr atomic.Uint64
	parallelism(b)
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			seq := ctr.Add(1)
			name := "o" + strconv.FormatUint(seq, 10)
			hk := binary.BigEndian.AppendUint64([]byte("h/agents/bench/"+name+"/"), seq)
			batch := db.NewBatch()
			err := errors.Join(
				batch.Set(hk, rec, nil),
				batch.Set([]byte("o/agents/bench/"+name), hk[len(hk)-8:], nil),
				batch.Commit(pebble.Sync),
				batch.Close(),
			)
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-us/write")
	fsyncStats(b, db)
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fsyncStats reports how many writes shared one WAL fsync and its mean
// duration.
func fsyncStats(b *testing.B, db *pebble.DB) {
	var m dto.Metric
	_ = db.Metrics().LogWriter.FsyncLatency.Write(&m)
	h := m.GetHistogram()
	b.ReportMetric(float64(b.N)/float64(max(1, h.GetSampleCount())), "writes/fsync")
	b.ReportMetric(h.GetSampleSum()/float64(max(1, h.GetSampleCount()))/1e6, "fsync-ms")
	b.ReportMetric(float64(db.Metrics().WAL.BytesIn)/float64(b.N), "walB/write")
	tot := db.Metrics().Total()
	b.ReportMetric(float64(tot.TableBytesFlushed)/float64(b.N), "flushB/write")
	b.ReportMetric(float64(tot.TableBytesCompacted)/float64(b.N), "compB/write")
}

func BenchmarkStoreCreate64(b *testing.B) {
	s, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var ctr atomic.Uint64
	ctx := context.Background()
	parallelism(b)
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		// Like the baseline's shared value, each writer reuses one request
		// object and only renames it: building request objects is the
		// caller's cost, not the store's (Create completes the object it is
		// given and drops the server's fields again on the next call).
		o := benchObject("")
		for pb.Next() {
			o.SetName("o" + strconv.FormatUint(ctr.Add(1), 10))
			if _, err := s.Create(ctx, "agents", o); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-us/write")
	fsyncStats(b, s.PebbleDB())
	st := s.Stats()
	b.ReportMetric(float64(st.Mutations)/float64(max(1, st.SyncedGroups)), "writes/batch")
}

// BenchmarkWatchFanout100 measures, for 100 watchers, the latency from the
// start of a Create call to the event's arrival at each watcher (so it
// includes the synced commit).
func BenchmarkWatchFanout100(b *testing.B) {
	const watchers = 100
	s, err := store.Open(b.TempDir(), store.Options{WatchBuffer: 4096})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	for range watchers {
		w, err := s.Watch(ctx, "agents", "", store.WatchOptions{})
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, b.N)
			for ev := range w.ResultChan() {
				u := ev.Object.(*unstructured.Unstructured)
				t0, err := strconv.ParseInt(u.GetAnnotations()["t0"], 10, 64)
				if err != nil {
					b.Error("event without t0")
					return
				}
				local = append(local, time.Duration(time.Now().UnixNano()-t0))
				if len(local) == b.N {
					break
				}
			}
			w.Stop()
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		}()
	}
	b.ResetTimer()
	for i := range b.N {
		o := benchObject("w" + strconv.Itoa(i))
		o.SetAnnotations(map[string]string{"t0": strconv.FormatInt(time.Now().UnixNano(), 10)})
		if _, err := s.Create(ctx, "agents", o); err != nil {
			b.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		b.Fatal("watchers did not receive all events")
	}
	b.StopTimer()
	if len(lat) != watchers*b.N {
		b.Fatalf("got %d deliveries, want %d", len(lat), watchers*b.N)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// open100kDir builds (once, cached across runs under the temp dir) a store
// holding 100,000 events: 10,000 objects, each created and updated 9 times.
func open100kDir(b *testing.B) string {
	dir := filepath.Join(os.TempDir(), "aicli-store-bench-open100k-v4")
	marker := filepath.Join(dir, "COMPLETE")
	if _, err := os.Stat(marker); err == nil {
		return dir
	}
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	const objects, writers = 10_000, 64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := w; i < objects; i += writers {
				o, err := s.Create(ctx, "agents", benchObject(fmt.Sprintf("o%05d", i)))
				if err != nil {
					b.Error(err)
					return
				}
				for v := range 9 {
					o.Object["spec"].(map[string]interface{})["model"] = "m" + strconv.Itoa(v)
					if o, err = s.Update(ctx, "agents", o); err != nil {
						b.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if s.CurrentRV() != 100_000 {
		b.Fatalf("built store has rv %d", s.CurrentRV())
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkOpen100k measures Open plus the first List and Get on a store
// with 100k events.
func BenchmarkOpen100k(b *testing.B) {
	dir := open100kDir(b)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		s, err := store.Open(dir, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		l, err := s.List(ctx, "agents", "", nil)
		if err != nil || len(l.Items) != 10_000 {
			b.Fatalf("list: %d items, %v", len(l.Items), err)
		}
		if _, err := s.Get(ctx, "agents", "bench", "o00042"); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/open")
}

// BenchmarkList1000 lists and JSON-serialises 1,000 objects.
func BenchmarkList1000(b *testing.B) {
	s, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 1000; i += 50 {
				if _, err := s.Create(ctx, "agents", benchObject(fmt.Sprintf("o%04d", i))); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	b.ResetTimer()
	for range b.N {
		l, err := s.List(ctx, "agents", "", nil)
		if err != nil || len(l.Items) != 1000 {
			b.Fatalf("list: %v", err)
		}
		if _, err := l.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/list")
}
