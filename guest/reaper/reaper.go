package reaper

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// Reaper reaps all children of the process. Only one may run per process, and
// nothing else in the process may call wait on its children (use Start).
type Reaper struct {
	log     *slog.Logger
	mu      sync.Mutex
	waiters map[int]chan syscall.WaitStatus
	reaped  int
	sig     chan os.Signal
	stop    chan struct{}
	stopped chan struct{}
}

// New starts the reaping loop.
func New(log *slog.Logger) *Reaper {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reaper{
		log: log, waiters: map[int]chan syscall.WaitStatus{}, sig: make(chan os.Signal, 1),
		stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	signal.Notify(r.sig, syscall.SIGCHLD)
	go r.loop()
	return r
}

func (r *Reaper) loop() {
	defer close(r.stopped)
	// A periodic sweep backs up coalesced or missed SIGCHLDs.
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		r.reapAll()
		select {
		case <-r.sig:
		case <-t.C:
		case <-r.stop:
			return
		}
	}
}

func (r *Reaper) reapAll() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
		r.dispatch(pid, ws)
	}
}

func (r *Reaper) dispatch(pid int, ws syscall.WaitStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reaped++
	if ch, ok := r.waiters[pid]; ok {
		delete(r.waiters, pid)
		ch <- ws
		return
	}
	r.log.Debug("reaped orphan", "pid", pid, "status", int(ws))
}

// Start starts cmd and returns a function that waits for its exit status.
// The child is started and registered under the lock the reaping loop
// dispatches under, so a child that exits at once is reaped but its status
// waits for the registration and still reaches its waiter.
func (r *Reaper) Start(cmd *exec.Cmd) (func() (syscall.WaitStatus, error), error) {
	r.mu.Lock()
	if err := cmd.Start(); err != nil {
		r.mu.Unlock()
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	ch := make(chan syscall.WaitStatus, 1)
	r.waiters[cmd.Process.Pid] = ch
	r.mu.Unlock()
	return func() (syscall.WaitStatus, error) {
		ws := <-ch
		_ = cmd.Process.Release()
		return ws, nil
	}, nil
}

// Reaped is the number of children reaped so far (started ones and orphans).
func (r *Reaper) Reaped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reaped
}

// Close stops the loop.
func (r *Reaper) Close() {
	signal.Stop(r.sig)
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.stopped
}
