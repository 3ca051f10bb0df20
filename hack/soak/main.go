// Command soak is the chaos soak behind hack/soak.sh: it runs a real aicli-supervisor with a fleet of fake-harness
// agents under concurrent load (sends, mail, tool calls, monitor wakes) while it kills the supervisor, guests and
// containers and restarts dockerd once, then checks after quiescence that nothing acknowledged was lost or
// duplicated and that nothing leaked. It exits 1 on any invariant violation.
//
// Timeline: set up (the fake guest image, the supervisor, the fleet live); phase 1, the first half of -duration,
// with every fault (dockerd restarted once at 30 %); a warm-up with container faults until the supervisor's event
// cache has cycled, then the baseline (load paused, fleet settled); phase 2, the second half, with guest and
// container faults only; quiescence; the checks (invariants.go) and the report.
//
// Files: supervisor.go (the process), fleet.go (agents, monitors, conversations), tools.go (the grants), load.go
// (operations and their ledger), chaos.go (faults), invariants.go (the checks), this file (the timeline and the
// report).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dockerclient "github.com/docker/docker/client"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/images"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/imagebuild"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/store"
)

// options are the command line.
type options struct {
	duration, period, faultEvery        time.Duration
	agents, watchCache, memtable, cache int
	binDir, workDir                     string
	dockerdRestart                      bool
	ensureDocker                        string
	// supervisorKillsUntil is the fraction of the run after which the supervisor is no longer killed; the RSS and
	// goroutine baseline is taken then, so the leak check covers the rest of the run's load and faults.
	supervisorKillsUntil float64
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 2*time.Minute, "how long load and chaos run")
	flag.IntVar(&o.agents, "agents", 20, "worker agents (each with one conversation)")
	flag.IntVar(&o.watchCache, "watch-cache", 256, "the supervisor's --watch-cache (the leak check waits until it has cycled)")
	flag.IntVar(&o.memtable, "memtable-mib", 1, "the supervisor's --memtable-mib (the leak check waits for flushes)")
	flag.IntVar(&o.cache, "cache-mib", 1, "the supervisor's --cache-mib (small, so that reads fill it before the baseline)")
	flag.DurationVar(&o.period, "period", time.Second, "mean pause between one worker's operations")
	flag.DurationVar(&o.faultEvery, "fault-every", 8*time.Second, "mean pause between faults")
	flag.StringVar(&o.binDir, "bin", "", "directory with aicli-supervisor, aicli-guest, aicli-fake-cli and aicli-tool")
	flag.StringVar(&o.workDir, "work", "", "scratch directory (data dir, logs); the caller removes it")
	flag.BoolVar(&o.dockerdRestart, "dockerd-restart", true, "restart dockerd once (kills every container on the engine)")
	flag.StringVar(&o.ensureDocker, "ensure-docker", "hack/ensure-docker.sh", "script that starts dockerd")
	flag.Float64Var(&o.supervisorKillsUntil, "supervisor-kills-until", 0.5, "fraction of the run with supervisor kills")
	flag.Parse()
	if o.binDir == "" || o.workDir == "" {
		fmt.Fprintln(os.Stderr, "soak: -bin and -work are required (hack/soak.sh sets them)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, o, os.Stdout)
	stop()
	os.Exit(code)
}

// run returns the exit code: 0 when every invariant held, 1 on a violation, 2 when the soak itself failed, 130
// when interrupted. It always stops the supervisor and removes its containers.
func run(ctx context.Context, o options, out io.Writer) int {
	logFile, err := os.Create(filepath.Join(o.workDir, "soak.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	defer logFile.Close()
	log := slog.New(slog.NewTextHandler(io.MultiWriter(os.Stderr, logFile), nil))
	docker, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	if err != nil {
		log.Error("docker client", "err", err)
		return 2
	}
	defer docker.Close()
	sup, err := newSupervisor(filepath.Join(o.binDir, "aicli-supervisor"), o.workDir, o.watchCache, o.memtable, o.cache)
	if err != nil {
		log.Error("supervisor client", "err", err)
		return 2
	}
	defer cleanUp(sup, docker, log)

	r, err := soak(ctx, o, sup, docker, log)
	if err != nil {
		if ctx.Err() != nil {
			log.Error("interrupted", "err", err)
			return 130
		}
		log.Error("the soak could not run", "err", err, "supervisorLog", sup.logPath)
		return 2
	}
	r.print(out)
	if r.violations() > 0 {
		return 1
	}
	return 0
}

// cleanUp stops the supervisor and removes every container it labelled (also after an interruption).
func cleanUp(sup *supervisor, docker *dockerclient.Client, log *slog.Logger) {
	sup.stop()
	id := sup.supervisorID()
	if id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := docker.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", runtime.LabelSupervisor+"="+id))})
	if err != nil {
		log.Warn("listing the soak's containers for cleanup", "err", err)
		return
	}
	for _, c := range list {
		if err := docker.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
			log.Warn("removing a soak container", "id", short(c.ID), "err", err)
		}
	}
}

// result is what the report prints.
type result struct {
	o               options
	supID           string
	attempts, acks  map[string]int
	errs            map[string]map[string]int
	faults          map[string]int
	resumes, starts int
	warm            time.Duration
	baseline, final usage
	checks          []*check
	info            []string
}

func (r *result) violations() int {
	n := 0
	for _, c := range r.checks {
		n += len(c.violations)
	}
	return n
}

// soak runs the timeline: set up, load with every fault, the baseline, load with container faults only,
// quiescence, the checks.
func soak(ctx context.Context, o options, sup *supervisor, docker *dockerclient.Client, log *slog.Logger) (*result, error) {
	log.Info("building the fake guest image")
	builder := &imagebuild.Builder{Docker: docker, Defs: images.FS, ArtifactDir: o.binDir, Logger: log}
	if _, err := builder.Ensure(ctx, string(v1alpha1.HarnessFake), nil); err != nil {
		return nil, fmt.Errorf("building the fake guest image: %w", err)
	}
	if err := sup.start(ctx); err != nil {
		return nil, err
	}
	log.Info("supervisor serving", "id", sup.supervisorID(), "dataDir", sup.dataDir)
	invocations := filepath.Join(o.workDir, "tool-invocations.log")
	f, err := setUp(ctx, sup.c, o.agents, invocations)
	if err != nil {
		return nil, err
	}
	log.Info("fleet live", "agents", len(f.workers), "monitors", len(f.monitors))

	l := newLedger()
	ld := &load{c: sup.c, f: f, l: l, period: o.period}
	ch := newChaos(sup, docker, o.ensureDocker, log)
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ld.run(loadCtx) }()
	go func() { defer wg.Done(); f.keep(loadCtx, sup.c) }()

	// Phase 1: every fault; dockerd restarts once at 30 % of the run.
	phase1 := time.Duration(float64(o.duration) * o.supervisorKillsUntil)
	var dockerdAt time.Duration
	if o.dockerdRestart {
		dockerdAt = time.Duration(float64(o.duration) * 0.3)
	}
	p1, endP1 := context.WithTimeout(ctx, phase1)
	ch.run(p1, o.faultEvery, []string{faultSupervisor, faultGuest, faultKill, faultRemove}, dockerdAt)
	endP1()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	warmStart := time.Now()
	baseline, err := warmUp(ctx, sup, f, ld, ch, o.faultEvery, log)
	if err != nil {
		return nil, err
	}
	warm := time.Since(warmStart)

	// Phase 2: guests and containers only, for the rest of the run.
	p2, endP2 := context.WithTimeout(ctx, o.duration-phase1)
	ch.run(p2, o.faultEvery, []string{faultGuest, faultKill, faultRemove}, 0)
	endP2()
	stopLoad()
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	log.Info("load and chaos over: waiting for quiescence")
	r := &result{o: o, supID: sup.supervisorID(), baseline: baseline, warm: warm}
	settleErr := settle(ctx, sup.c, f, 2*time.Minute, log)
	final, err := sup.settledSample(ctx, 5)
	if err != nil {
		return nil, err
	}
	r.final = final
	v := &verifier{c: sup.c, docker: docker, supID: sup.supervisorID(), f: f, l: l, ch: ch, invocationLog: invocations}
	if err := v.load(ctx); err != nil {
		return nil, err
	}
	v.results()
	quiet := &check{name: "quiescence: every worker conversation live and idle, no unread mail", checked: 1}
	if settleErr != nil {
		quiet.fail("%v", settleErr)
	}
	r.checks = []*check{quiet, v.sends(), v.mail(), v.mailShown(), v.tools(ctx), v.containers(ctx), v.monitors(), leak(baseline, final)}
	r.info = v.info
	l.mu.Lock()
	r.attempts, r.acks, r.errs = l.attempts, l.acks, l.errs
	l.mu.Unlock()
	r.faults = ch.snapshot()
	f.mu.Lock()
	r.resumes = f.resumes
	f.mu.Unlock()
	r.starts = sup.starts
	return r, nil
}

// warmUp runs load and container faults until the supervisor, started for the last time, holds its steady-state
// memory, then takes the baseline. Three bounded consumers grow first: its in-memory cache of recent store events
// (with their objects, about 7 KB each here; trimmed from twice its size back to its size), pebble's memtables
// (outside the Go heap, in RSS: filled by writes, freed at a flush, each one twice the size of the one before up to
// the memtable size) and pebble's block cache (outside the Go heap, filled by reads of flushed tables; 1 MiB here). So the warm-up lasts until the process has written twice its --watch-cache events and flushed
// its memtable about four times (supervisor.flushesSinceStart), with small sizes for both (a minute or two, not the
// hours the defaults would take at this load). Then it pauses the load, settles the fleet and takes the baseline:
// goroutines settled, RSS the highest of the settled samples and of those taken every 2 s after the conditions held,
// through one more flush (RSS follows the memtable's fill; the final figure is compared with this envelope).
func warmUp(ctx context.Context, sup *supervisor, f *fleet, ld *load, ch *chaos, faultEvery time.Duration, log *slog.Logger) (usage, error) {
	cache := sup.watchCache
	if cache <= 0 {
		cache = store.DefaultWatchCache
	}
	need := uint64(2*cache + 1)
	const flushes = 4
	log.Info("phase 1 over: warming up until the event cache has cycled and the store has flushed", "faults", ch.snapshot(),
		"events", need, "flushes", flushes)
	wctx, endWarm := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); ch.run(wctx, faultEvery, []string{faultGuest, faultKill, faultRemove}, 0) }()
	var peak float64
	for warm := false; !warm; {
		select {
		case <-ctx.Done():
			endWarm()
			<-done
			return usage{}, ctx.Err()
		case <-time.After(2 * time.Second):
		}
		n, err := sup.eventsSinceStart(ctx)
		warm = err == nil && n >= need && sup.flushesSinceStart() >= flushes
	}
	// The envelope: RSS every 2 s through one more memtable flush (at most 90 s).
	t0, until := sup.flushesSinceStart(), time.Now().Add(90*time.Second)
	for sup.flushesSinceStart() == t0 && time.Now().Before(until) && ctx.Err() == nil {
		if u, err := sup.sample(ctx); err == nil {
			peak = max(peak, u.RSSBytes)
		}
		time.Sleep(2 * time.Second)
	}
	endWarm()
	<-done
	ld.pause()
	defer ld.resume()
	if err := settle(ctx, sup.c, f, 2*time.Minute, log); err != nil {
		return usage{}, fmt.Errorf("settling for the baseline: %w", err)
	}
	base, err := sup.settledSample(ctx, 5)
	if err != nil {
		return usage{}, err
	}
	settledRSS := base.RSSBytes
	base.RSSBytes = max(base.RSSBytes, peak)
	log.Info("baseline taken; phase 2: guest and container faults only", "anonRSSMiB", base.RSSBytes/(1<<20),
		"settledAnonRSSMiB", settledRSS/(1<<20), "fileRSSMiB", base.RSSFileBytes/(1<<20), "heapInuseMiB", base.HeapInuseBytes/(1<<20), "goroutines", base.Goroutines)
	return base, nil
}

// settle waits until every worker conversation is live, every Active conversation IDLE, no worker has unread
// mail, and no transcript has grown for 5 s in a row; it resumes conversations a late fault paused. A backlog of
// mail can take minutes to drain, so it gives up only when nothing has moved (no transcript grew, no unread count
// changed) for stall, or after an hour.
func settle(ctx context.Context, c *client.Client, f *fleet, stall time.Duration, log *slog.Logger) error {
	began := time.Now()
	lastMove := began
	var last, why string
	stable, n := 0, 0
	for {
		fp, notYet, err := fingerprint(ctx, c, f)
		if err == nil && fp != last {
			lastMove = time.Now()
		}
		switch {
		case err != nil:
			stable, why = 0, err.Error()
		case notYet != "":
			stable, why = 0, notYet
		case fp == last:
			stable++
		default:
			stable, why = 0, "transcripts still growing"
		}
		last = fp
		if stable >= 5 {
			log.Info("settled", "after", time.Since(began).Round(time.Second))
			return nil
		}
		if n++; n%15 == 0 {
			log.Info("settling", "waiting for", why)
		}
		if d := time.Since(lastMove); d > stall || time.Since(began) > time.Hour {
			return fmt.Errorf("not quiescent after %s (nothing moved for %s): %s", time.Since(began).Round(time.Second),
				d.Round(time.Second), why)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// fingerprint summarises the fleet's progress (each conversation's state and transcript length); notYet says why
// it is not quiescent, "" when it may be.
func fingerprint(ctx context.Context, c *client.Client, f *fleet) (string, string, error) {
	if _, err := f.resumePaused(ctx, c); err != nil {
		return "", "", err
	}
	convs, err := conversations(ctx, c)
	if err != nil {
		return "", "", err
	}
	var b strings.Builder
	notYet := ""
	for _, conv := range convs {
		if conv.Spec.DesiredState != v1alpha1.ConversationActive {
			continue
		}
		ready := meta(conv.Status.Conditions, v1alpha1.ConditionReady)
		if ready != "True" || conv.Status.Execution != "IDLE" {
			notYet = fmt.Sprintf("conversation %s: Ready %s, %s", conv.Name, ready, conv.Status.Execution)
		}
		page, err := c.TranscriptBefore(ctx, namespace, conv.Name, 0, 1)
		if err != nil {
			return "", "", err
		}
		fmt.Fprintf(&b, "%s=%d;", conv.Name, page.NextCursor)
	}
	unread := 0
	agents, err := c.List(ctx, "agents", namespace, client.ListOptions{})
	if err != nil {
		return "", "", err
	}
	for i := range agents.Items {
		var a v1alpha1.Agent
		if err := client.ToTyped(&agents.Items[i], &a); err == nil && a.Status.InboxUnread > 0 {
			notYet = fmt.Sprintf("agent %s: %d unread", a.Name, a.Status.InboxUnread)
			unread += int(a.Status.InboxUnread)
		}
	}
	fmt.Fprintf(&b, "unread=%d", unread)
	if err := f.waitLive(ctx, c, 0); err != nil && notYet == "" {
		notYet = err.Error()
	}
	return b.String(), notYet, nil
}

func (r *result) print(w io.Writer) {
	o := r.o
	p1 := time.Duration(float64(o.duration) * o.supervisorKillsUntil).Round(time.Second)
	fmt.Fprintf(w, "\n== soak: %s of load and chaos (%s with every fault, then %s with guest and container faults), "+
		"plus %s of warm-up before the baseline; %d worker agents, supervisor %s\n",
		o.duration, p1, o.duration-p1, r.warm.Round(time.Second), o.agents, r.supID)
	total := 0
	fmt.Fprintln(w, "operations acknowledged (of attempted):")
	for _, k := range opKinds {
		total += r.acks[k]
		fmt.Fprintf(w, "  %-10s %6d of %6d%s\n", k, r.acks[k], r.attempts[k], errSummary(r.errs[k]))
	}
	fmt.Fprintf(w, "  %-10s %6d\n", "total", total)
	fmt.Fprintln(w, "faults injected:")
	nf := 0
	for _, k := range faultKinds {
		nf += r.faults[k]
		fmt.Fprintf(w, "  %-18s %4d\n", k, r.faults[k])
	}
	fmt.Fprintf(w, "  %-18s %4d  (supervisor processes started: %d; conversations resumed after unplanned pauses: %d)\n",
		"total", nf, r.starts, r.resumes)
	fmt.Fprintln(w, "invariants:")
	for _, c := range r.checks {
		mark := "ok  "
		if len(c.violations) > 0 {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  [%s] %s: %d checked, %d violations\n", mark, c.name, c.checked, len(c.violations))
		for i, v := range c.violations {
			if i == 10 {
				fmt.Fprintf(w, "         … %d more\n", len(c.violations)-10)
				break
			}
			fmt.Fprintf(w, "         - %s\n", v)
		}
	}
	fmt.Fprintf(w, "supervisor: baseline anonymous RSS %.1f MiB (heap in use %.1f MiB; file-backed RSS %.1f MiB), %.0f goroutines; "+
		"final anonymous RSS %.1f MiB (heap in use %.1f MiB; file-backed RSS %.1f MiB), %.0f goroutines\n",
		r.baseline.RSSBytes/(1<<20), r.baseline.HeapInuseBytes/(1<<20), r.baseline.RSSFileBytes/(1<<20), r.baseline.Goroutines,
		r.final.RSSBytes/(1<<20), r.final.HeapInuseBytes/(1<<20), r.final.RSSFileBytes/(1<<20), r.final.Goroutines)
	for _, line := range r.info {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "invariant violations: %d\n", r.violations())
}

func errSummary(errs map[string]int) string {
	if len(errs) == 0 {
		return ""
	}
	keys := make([]string, 0, len(errs))
	for k := range errs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, errs[k]))
	}
	return "  (failed: " + strings.Join(parts, ", ") + ")"
}
