package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// Shape of BenchmarkMonitorCPU (the target: "100 attachments over 50 live
// conversations add < 5% supervisor CPU at a 1 MB/min transcript rate").
const (
	cpuBenchTargets     = 50 // target agents, one conversation each
	cpuBenchMonitors    = 10 // monitor agents
	cpuBenchPerTarget   = 2  // attachments per target (100 in all)
	cpuBenchKeywords    = 20 // keywords per attachment, none of which occurs in the text
	cpuBenchTurnPeriod  = 10 * time.Second
	cpuBenchAgentChunks = 6 // agent entries per turn (~500 bytes each), after a ~300-byte human entry and before a ~200-byte tool entry
)

// BenchmarkMonitorCPU runs the real supervisor in-process (store, API,
// controllers, history index, monitor service; Docker only for its ping) with
// 50 target conversations whose transcripts grow at ~1 MB/min in all, and
// measures the process's CPU time (getrusage) over windows without any
// MonitorAttachment and with 100 of them (2 per conversation, 20 keywords
// each), alternating: baseline, monitored, baseline, … The conversations are
// simulated at the transcript seam: they are Paused (no containers; the
// machine cannot host 50 while measuring), their turns are appended to the
// supervisor's own StoreLog (what the pump does for a live guest), and each
// turn touches the conversation object twice (BUSY, IDLE: the status writes
// of a live conversation) as an annotation. No keyword ever matches, so no
// wake starts a container; a wake's own cost is one status write and one
// message. Env: MONITOR_CPU_WINDOW (default 60s), MONITOR_CPU_ROUNDS (monitored
// windows, default 1), MONITOR_CPU_PROFILE (a directory: one CPU profile per
// window).
//
//	go test -run '^$' -bench MonitorCPU -benchtime 1x -timeout 30m ./internal/supervisor/
func BenchmarkMonitorCPU(b *testing.B) {
	window := envDuration(b, "MONITOR_CPU_WINDOW", 60*time.Second)
	rounds := envInt(b, "MONITOR_CPU_ROUNDS", 1)
	profDir := os.Getenv("MONITOR_CPU_PROFILE")
	dir := b.TempDir()
	sup := startSupervisor(b, Config{DataDir: dir})
	api, err := client.New(client.Config{Server: "unix://" + layout.Dir(dir).Socket()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	convs := make([]*v1alpha1.Conversation, cpuBenchTargets)
	for i := range cpuBenchMonitors {
		post(ctx, b, api, "agents", fmt.Sprintf(`{"metadata":{"name":"mon-%d"},"spec":{"harness":"fake"}}`, i))
	}
	sc := storeclient.New(sup.store)
	for i := range convs {
		post(ctx, b, api, "agents", fmt.Sprintf(`{"metadata":{"name":"tgt-%d"},"spec":{"harness":"fake"}}`, i))
		post(ctx, b, api, "conversations", fmt.Sprintf(`{"metadata":{"name":"tgt-%d-c"},"spec":{"agentRef":"tgt-%d","desiredState":"Paused"}}`, i, i))
		convs[i] = &v1alpha1.Conversation{}
		if err := sc.Get(ctx, "default", fmt.Sprintf("tgt-%d-c", i), convs[i]); err != nil {
			b.Fatal(err)
		}
	}
	load := &transcriptLoad{sup: sup, sc: sc, convs: convs}
	load.start(ctx, b)
	time.Sleep(5 * time.Second) // the first turns, the controllers' first passes

	var base, mon []float64 // CPU seconds per wall second
	measure := func(name string) float64 {
		if profDir != "" {
			f, err := os.Create(filepath.Join(profDir, name+".pprof"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				b.Fatal(err)
			}
			defer pprof.StopCPUProfile()
		}
		bytes0, cpu0, t0 := load.bytes.Load(), cpuTime(b), time.Now()
		time.Sleep(window)
		wall := time.Since(t0).Seconds()
		cpu := (cpuTime(b) - cpu0).Seconds() / wall
		rate := float64(load.bytes.Load()-bytes0) / wall * 60 / 1e6
		b.Logf("%s: %.1f%% of one core, transcripts %.2f MB/min", name, cpu*100, rate)
		b.ReportMetric(rate, "transcript-MB/min")
		return cpu
	}
	b.ResetTimer()
	for r := range rounds {
		base = append(base, measure(fmt.Sprintf("baseline-%d", r)))
		attach(ctx, b, api, sc)
		time.Sleep(5 * time.Second) // every follow started, the first cursors written
		before := cursors(ctx, b, sc)
		mon = append(mon, measure(fmt.Sprintf("monitored-%d", r)))
		checkFollowed(ctx, b, sc, before)
		detach(ctx, b, api, sc)
		time.Sleep(5 * time.Second)
	}
	base = append(base, measure(fmt.Sprintf("baseline-%d", rounds)))
	b.StopTimer()
	baseMean, monMean := mean(base), mean(mon)
	b.ReportMetric(baseMean*100, "baseline-cpu-%core")
	b.ReportMetric(monMean*100, "monitored-cpu-%core")
	b.ReportMetric((monMean-baseMean)*100, "added-cpu-%core")
	b.ReportMetric((monMean/baseMean-1)*100, "added-cpu-%baseline")
}

// transcriptLoad appends the target conversations' turns to the
// supervisor's transcript log.
type transcriptLoad struct {
	sup   *Supervisor
	sc    *storeclient.Client
	convs []*v1alpha1.Conversation
	bytes atomic.Int64
}

func (l *transcriptLoad) start(ctx context.Context, b *testing.B) {
	var failed sync.Once
	fail := func(err error) {
		if ctx.Err() == nil {
			failed.Do(func() { b.Errorf("transcript load: %v", err) })
		}
	}
	for i, conv := range l.convs {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(i), 17))
			// Staggered: the 50 turns spread over the period.
			next := time.Now().Add(cpuBenchTurnPeriod * time.Duration(i) / time.Duration(len(l.convs)))
			for ctx.Err() == nil {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Until(next)):
				}
				next = next.Add(cpuBenchTurnPeriod)
				if err := l.turn(ctx, rng, conv); err != nil {
					fail(err)
					return
				}
			}
		}()
	}
}

// turn is one exchange: BUSY, a human entry, agent entries 300 ms apart, a
// tool entry, IDLE.
func (l *transcriptLoad) turn(ctx context.Context, rng *rand.Rand, conv *v1alpha1.Conversation) error {
	if err := l.touch(ctx, conv, "BUSY"); err != nil {
		return err
	}
	entries := []transcriptwire.Entry{{Speaker: transcriptwire.SpeakerHuman, Text: prose(rng, 300)}}
	for range cpuBenchAgentChunks {
		entries = append(entries, transcriptwire.Entry{Speaker: transcriptwire.SpeakerAgent, Text: prose(rng, 500)})
	}
	entries = append(entries, transcriptwire.Entry{Speaker: transcriptwire.SpeakerTool, Text: prose(rng, 200)})
	for i, e := range entries {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(300 * time.Millisecond):
			}
		}
		e.Time = time.Now()
		if _, err := l.sup.transcripts.Append(ctx, string(conv.UID), []transcriptwire.Entry{e}); err != nil {
			return err
		}
		l.bytes.Add(int64(len(e.Text)))
	}
	return l.touch(ctx, conv, "IDLE")
}

// touch stands for a live conversation's execution status write.
func (l *transcriptLoad) touch(ctx context.Context, conv *v1alpha1.Conversation, execution string) error {
	for {
		c := &v1alpha1.Conversation{}
		if err := l.sc.Get(ctx, conv.Namespace, conv.Name, c); err != nil {
			return err
		}
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations["bench.aicli.dev/execution"] = execution
		err := l.sc.Update(ctx, c)
		if apierrors.IsConflict(err) {
			continue
		}
		return err
	}
}

var proseWords = strings.Fields(`the build step compiles each package then runs its tests and reports what failed
	so the next change can start from a clean tree while the reviewer reads the diff and asks why the cache key
	includes the module version ERROR: request timed out after 30s retrying connection to database host db-3
	func (s *Server) handle(w http.ResponseWriter, r *http.Request) { if err := s.check(r); err != nil { return } }
	café naïve résumé 200 OK GET /api/v1/items?limit=50 took 12ms`)

// prose is about n bytes of transcript-like text (none of the keywords).
func prose(rng *rand.Rand, n int) string {
	var sb strings.Builder
	for sb.Len() < n {
		sb.WriteString(proseWords[rng.IntN(len(proseWords))])
		sb.WriteByte(' ')
	}
	return sb.String()
}

// attach creates the 100 attachments and waits until the loop serves each
// (Ready, every target conversation listed).
func attach(ctx context.Context, b *testing.B, api *client.Client, sc *storeclient.Client) {
	b.Helper()
	n := 0
	for t := range cpuBenchTargets {
		for k := range cpuBenchPerTarget {
			kws := make([]map[string]string, cpuBenchKeywords)
			for j := range kws {
				kws[j] = map[string]string{"text": fmt.Sprintf("zq%dx%dv%d", t, k, j)}
				if j%3 == 0 {
					kws[j]["mode"] = "Word"
				}
			}
			spec, _ := json.Marshal(map[string]any{"monitor": fmt.Sprintf("mon-%d", n%cpuBenchMonitors),
				"target": map[string]any{"agent": fmt.Sprintf("tgt-%d", t)}, "trigger": map[string]any{"keywords": kws}})
			post(ctx, b, api, "monitorattachments", fmt.Sprintf(`{"metadata":{"name":"att-%d-%d"},"spec":%s}`, t, k, spec))
			n++
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var list v1alpha1.MonitorAttachmentList
		if err := sc.List(ctx, "default", &list, nil); err != nil {
			b.Fatal(err)
		}
		ready := 0
		for _, a := range list.Items {
			if meta.IsStatusConditionTrue(a.Status.Conditions, v1alpha1.ConditionReady) && len(a.Status.Conversations) == 1 {
				ready++
			}
		}
		if ready == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d attachments ready after 2 minutes", ready, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cursors is every attachment's cursor of its one target conversation.
func cursors(ctx context.Context, b *testing.B, sc *storeclient.Client) map[string]int64 {
	b.Helper()
	var list v1alpha1.MonitorAttachmentList
	if err := sc.List(ctx, "default", &list, nil); err != nil {
		b.Fatal(err)
	}
	out := map[string]int64{}
	for _, a := range list.Items {
		if len(a.Status.Conversations) != 1 || a.Status.Wakes != 0 {
			b.Fatalf("attachment %s: want one watched conversation and no wake, status %+v", a.Name, a.Status)
		}
		out[a.Name] = a.Status.Conversations[0].Cursor
	}
	return out
}

// checkFollowed fails unless the loop evaluated every attachment's target
// during the window (its durable cursor moved) and nothing woke.
func checkFollowed(ctx context.Context, b *testing.B, sc *storeclient.Client, before map[string]int64) {
	b.Helper()
	after := cursors(ctx, b, sc)
	if len(after) != cpuBenchTargets*cpuBenchPerTarget {
		b.Fatalf("%d attachments, want %d", len(after), cpuBenchTargets*cpuBenchPerTarget)
	}
	for name, c := range after {
		if c <= before[name] {
			b.Fatalf("attachment %s: cursor %d did not move from %d during the window", name, c, before[name])
		}
	}
}

// detach deletes every attachment and waits until none is left.
func detach(ctx context.Context, b *testing.B, api *client.Client, sc *storeclient.Client) {
	b.Helper()
	var list v1alpha1.MonitorAttachmentList
	if err := sc.List(ctx, "default", &list, nil); err != nil {
		b.Fatal(err)
	}
	for _, a := range list.Items {
		if _, err := api.DoRaw(ctx, "DELETE", client.ResourcePath("monitorattachments", "default", a.Name), "", nil); err != nil {
			b.Fatal(err)
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if err := sc.List(ctx, "default", &list, nil); err != nil {
			b.Fatal(err)
		}
		if len(list.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d attachments left a minute after deleting them", len(list.Items))
		}
	}
}

// post creates an object of kind plural in namespace default through the API (admission included).
func post(ctx context.Context, b *testing.B, api *client.Client, plural, body string) {
	b.Helper()
	kinds := map[string]string{"agents": "Agent", "conversations": "Conversation", "monitorattachments": "MonitorAttachment"}
	obj := fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":%q,%s`, kinds[plural], strings.TrimPrefix(body, "{"))
	if _, err := api.DoRaw(ctx, "POST", client.ResourcePath(plural, "default", ""), client.ContentTypeJSON, []byte(obj)); err != nil {
		b.Fatalf("create %s: %v", plural, err)
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return d
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s: want a positive integer, got %q", name, v)
	}
	return n
}
