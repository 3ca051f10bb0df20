package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/layout"
)

// supervisor is the real aicli-supervisor process the soak drives: its own
// data dir and unix socket, its log appended to <work>/supervisor.log across
// restarts. The soak is its parent and the only one that ends it (by PID).
type supervisor struct {
	bin, dataDir, logPath string
	// watchCache, memtableMiB and cacheMiB are the supervisor's --watch-cache (its in-memory cache of recent store
	// events), --memtable-mib (pebble's memtable, outside the Go heap, filled by writes until a flush) and
	// --cache-mib (pebble's block cache, outside the Go heap, filled by reads of flushed tables).
	watchCache, memtableMiB, cacheMiB int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	// id is the supervisor's stable id (its containers' aicli.dev/supervisor label).
	id string
	// starts counts the processes started; startSeq is the store's event sequence when the last one started, and
	// startFile the highest file number of its store then.
	starts    int
	startSeq  uint64
	startFile int
	c         *client.Client
}

func newSupervisor(bin, workDir string, watchCache, memtableMiB, cacheMiB int) (*supervisor, error) {
	s := &supervisor{bin: bin, dataDir: filepath.Join(workDir, "data"), logPath: filepath.Join(workDir, "supervisor.log"),
		watchCache: watchCache, memtableMiB: memtableMiB, cacheMiB: cacheMiB}
	c, err := client.New(client.Config{Server: "unix://" + layout.Dir(s.dataDir).Socket(), Timeout: 20 * time.Second})
	if err != nil {
		return nil, err
	}
	s.c = c
	return s, nil
}

// start runs a new supervisor process on the data dir and waits until it serves.
func (s *supervisor) start(ctx context.Context) error {
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "--data-dir", s.dataDir, "--log-format", "text", "--offline-pricing",
		"--watch-cache", strconv.Itoa(s.watchCache), "--memtable-mib", strconv.Itoa(s.memtableMiB),
		"--cache-mib", strconv.Itoa(s.cacheMiB))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting the supervisor: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.starts++
	s.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := s.c.DoRaw(ctx, "GET", "/readyz", "", nil); err == nil {
			break
		}
		select {
		case <-done:
			return fmt.Errorf("the supervisor exited while starting (log: %s)", s.logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the supervisor did not serve within 60s (log: %s)", s.logPath)
		}
	}
	id, err := os.ReadFile(layout.Dir(s.dataDir).SupervisorID())
	if err != nil {
		return err
	}
	seq, err := s.storeSeq(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.id = strings.TrimSpace(string(id))
	s.startSeq = seq
	s.startFile = s.newestFile(false)
	s.mu.Unlock()
	return nil
}

// newestFile returns the highest pebble file number in the store (NNNNNN.sst, .log, MANIFEST-NNNNNN), of table
// files only when tablesOnly.
func (s *supervisor) newestFile(tablesOnly bool) int {
	entries, _ := os.ReadDir(layout.Dir(s.dataDir).Store())
	newest := 0
	for _, e := range entries {
		name := e.Name()
		isTable := strings.HasSuffix(name, ".sst")
		if tablesOnly && !isTable {
			continue
		}
		name = strings.TrimPrefix(strings.TrimSuffix(strings.TrimSuffix(name, ".sst"), ".log"), "MANIFEST-")
		if num, err := strconv.Atoi(name); err == nil {
			newest = max(newest, num)
		}
	}
	return newest
}

// flushesSinceStart estimates the memtable flushes of the running process: each allocates a table and a log file
// number, so it is half the file numbers from the highest at the start to the newest table.
func (s *supervisor) flushesSinceStart() int {
	s.mu.Lock()
	start := s.startFile
	s.mu.Unlock()
	return max(s.newestFile(true)-start, 0) / 2
}

// storeSeq is the store's current event sequence (a list's resourceVersion).
func (s *supervisor) storeSeq(ctx context.Context) (uint64, error) {
	list, err := s.c.List(ctx, "agents", namespace, client.ListOptions{LabelSelector: "aicli.dev/soak-none=none"})
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(list.GetResourceVersion(), 10, 64)
}

// eventsSinceStart is how many store events the running process has written.
func (s *supervisor) eventsSinceStart(ctx context.Context) (uint64, error) {
	seq, err := s.storeSeq(ctx)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return seq - s.startSeq, nil
}

// pid is the running process's PID, 0 when none runs.
func (s *supervisor) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	select {
	case <-s.done:
		return 0
	default:
		return s.cmd.Process.Pid
	}
}

// supervisorID is the id its containers are labelled with.
func (s *supervisor) supervisorID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// kill9 ends the process with SIGKILL and waits for it.
func (s *supervisor) kill9() error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return errors.New("no supervisor process")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-done
	return nil
}

// stop ends the process with SIGTERM (SIGKILL after 20s) and waits for it.
func (s *supervisor) stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// usage is what the leak check compares: the process's own resident memory (anonymous pages: the Go heap, stacks,
// pebble's memtables and block cache) and goroutines. Its file-backed resident pages (the binary's code as it
// runs, and the history and recall indexes' mapped segment files, which grow with the data) are the kernel's page
// cache, reclaimable at any time; they are reported beside, as is the whole RSS.
type usage struct {
	RSSBytes     float64 // resident, anonymous (RssAnon)
	RSSFileBytes float64 // resident, file-backed (RssFile)
	Goroutines   float64
	// HeapInuseBytes is reported beside them: it tells a grown live heap from memory not yet returned to the OS.
	HeapInuseBytes float64
}

// sample reads the supervisor's resident memory from /proc/PID/status and its goroutines and heap from its own
// metrics endpoint.
func (s *supervisor) sample(ctx context.Context) (usage, error) {
	pid := s.pid()
	if pid == 0 {
		return usage{}, errors.New("the supervisor is not running")
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return usage{}, err
	}
	var u usage
	if u.RSSBytes, u.RSSFileBytes, err = residentMemory(string(status)); err != nil {
		return usage{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	data, err := s.c.DoRaw(ctx, "GET", "/metrics", "", nil)
	if err != nil {
		return usage{}, err
	}
	goroutines := false
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch name {
		case "go_goroutines":
			if u.Goroutines, err = strconv.ParseFloat(strings.TrimSpace(value), 64); err != nil {
				return usage{}, fmt.Errorf("metric %s: %w", name, err)
			}
			goroutines = true
		case "go_memstats_heap_inuse_bytes":
			u.HeapInuseBytes, _ = strconv.ParseFloat(strings.TrimSpace(value), 64)
		}
	}
	if !goroutines {
		return usage{}, errors.New("metrics lack go_goroutines")
	}
	return u, nil
}

// residentMemory returns the anonymous and the file-backed resident bytes of a /proc/PID/status text.
func residentMemory(status string) (anon, file float64, err error) {
	found := 0
	for line := range strings.Lines(status) {
		name, value, _ := strings.Cut(line, ":")
		var dst *float64
		switch name {
		case "RssAnon":
			dst = &anon
		case "RssFile":
			dst = &file
		default:
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")), 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", name, err)
		}
		*dst = kb * 1024
		found++
	}
	if found != 2 {
		return 0, 0, errors.New("no RssAnon or RssFile line")
	}
	return anon, file, nil
}

// settledSample is the smallest of n one-second samples (the runtime returns freed memory to the OS gradually;
// both the baseline and the final figure are taken this way).
func (s *supervisor) settledSample(ctx context.Context, n int) (usage, error) {
	var best usage
	for i := range n {
		u, err := s.sample(ctx)
		if err != nil {
			return usage{}, err
		}
		if i == 0 || u.RSSBytes < best.RSSBytes {
			best.RSSBytes = u.RSSBytes
		}
		if i == 0 || u.RSSFileBytes < best.RSSFileBytes {
			best.RSSFileBytes = u.RSSFileBytes
		}
		if i == 0 || u.Goroutines < best.Goroutines {
			best.Goroutines = u.Goroutines
		}
		if i == 0 || u.HeapInuseBytes < best.HeapInuseBytes {
			best.HeapInuseBytes = u.HeapInuseBytes
		}
		if i < n-1 {
			select {
			case <-ctx.Done():
				return usage{}, ctx.Err()
			case <-time.After(time.Second):
			}
		}
	}
	return best, nil
}
