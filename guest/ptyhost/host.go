package ptyhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/nbwriter"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/vtscreen"
)

// Defaults for Options and StartRequest.
const (
	DefaultHome             = "/home/agent"
	DefaultWorkDir          = "/workspace"
	DefaultCols             = 120
	DefaultRows             = 40
	MaxCols                 = 1000
	MaxRows                 = 1000
	DefaultStopGrace        = 3 * time.Second
	DefaultSubscriberBuffer = 256 << 10
	DefaultMirrorBuffer     = 1 << 20
	// DefaultSubscriberGrace is how long a subscriber with a full backlog may
	// hold up the PTY reader without reading anything before it is cut off.
	DefaultSubscriberGrace = time.Second
	DefaultPath            = "/opt/aicli/bin:/usr/local/bin:/usr/bin:/bin"
	// emuBacklogBytes bounds the output the emulator may lag behind the PTY
	// reader; past it the reader waits for the emulator.
	emuBacklogBytes = 256 << 10
	// emuBatchBytes is the most output fed to the emulator under one lock, so
	// a render never waits for a whole backlog.
	emuBatchBytes = 64 << 10
	// emuBurstBytes is the batch size from which the emulator waits
	// emuBurstPause for more output before taking the next batch.
	emuBurstBytes = 4 << 10
	emuBurstPause = time.Millisecond
	// evalInterval is the shortest time between two status evaluations
	// during a burst of at least evalBurstBytes.
	evalInterval   = 2 * time.Millisecond
	evalBurstBytes = 16 << 10
)

// Credential is the user the CLI runs as.
type Credential struct {
	UID, GID uint32
}

// Waiter starts a command and returns how to wait for it. The default waits
// on the process directly; a PID 1 guest passes its reaper (reaper.Reaper).
type Waiter interface {
	Start(cmd *exec.Cmd) (wait func() (syscall.WaitStatus, error), err error)
}

// Options configure a Host.
type Options struct {
	// Registry resolves StartRequest.Harness. Required.
	Registry *harness.Registry
	// DefaultHarness is used when a StartRequest names none.
	DefaultHarness string
	// Home is the CLI's HOME (default DefaultHome). Created if missing.
	Home string
	// WorkDir is used when a StartRequest has none (default DefaultWorkDir).
	WorkDir string
	// RunAs, when set, runs the CLI as this user (the guest must be root).
	RunAs *Credential
	// BaseEnv is the CLI's base environment (default PATH=DefaultPath,
	// LANG=C.UTF-8). The guest's own environment is never inherited.
	BaseEnv []string
	// Mirror receives the CLI's verbatim output through a non-blocking bounded
	// writer (e.g. os.Stdout for container logs); nil disables it.
	Mirror io.Writer
	// MirrorBuffer bounds the mirror's queue in bytes (default DefaultMirrorBuffer).
	MirrorBuffer int
	// PassthroughQueries leaves terminal queries (cursor position, device
	// attributes) unanswered because a real terminal on the mirror answers them.
	PassthroughQueries bool
	// StopGrace is the time between SIGTERM and SIGKILL (default DefaultStopGrace).
	StopGrace time.Duration
	// Waiter starts and waits for the CLI (default: direct wait).
	Waiter Waiter
	// SubscriberBuffer bounds each Subscribe reader's backlog in bytes. A
	// reader at its bound holds up the PTY (and so the CLI) while it keeps
	// reading, like a slow terminal would.
	SubscriberBuffer int
	// SubscriberGrace cuts off a subscriber at its bound that has read nothing
	// for this long (default DefaultSubscriberGrace).
	SubscriberGrace time.Duration
	// Logger receives structured logs (default: discard).
	Logger *slog.Logger
}

type runState int

const (
	stateNew runState = iota
	stateRunning
	stateExited
)

// Host is the local implementation of ptyapi.PTY: one CLI under a real PTY.
type Host struct {
	opts Options
	log  *slog.Logger

	mu          sync.Mutex
	state       runState
	adapter     harness.Adapter
	policy      harness.DeliveryPolicy
	harnessName string
	sessionID   string
	workDir     string
	pid         int
	exitCode    *int
	stopAsked   bool // Stop was called: the exit was requested, not a crash
	launchedAt  time.Time
	// screen is the status classified from the rendered screen; status is
	// the reported one (screen, but BUSY instead of IDLE while an accepted
	// message's turn is open, see status.go) and since when it last changed.
	screen ptyapi.ExecutionStatus
	status ptyapi.ExecutionStatus
	since  time.Time
	known  bool // a cue was ever recognised
	// startScreen: the IDLE screen is the CLI's start screen
	// (harness.StartScreener), on which no turn has ended.
	startScreen bool
	// settled is set once an IDLE screen has held for the policy's
	// StartupSettle; startIdle is when the current candidate began, and
	// settleTimer asks for the evaluation that will find it has.
	settled     bool
	startIdle   time.Time
	settleTimer *time.Timer
	queue       []queued
	inflight    bool
	// outbox records accepted messages on the durable home (nil: none); sendMu orders SendMessage calls.
	outbox      *outbox
	sendMu      sync.Mutex
	lastOutput  time.Time
	lastDeliver time.Time
	deliverSeq  uint64
	evalSeq     uint64
	sawNonIdle  bool
	// sawTurn: since the last submission the screen showed a recognised
	// busy or waiting cue (not a guess on a screen without cues).
	sawTurn bool
	// turnOpen is set when a message has been delivered and the CLI's turn
	// for it has not been seen to end; turnStart is when its delivery ended.
	turnOpen  bool
	turnStart time.Time
	// cue is the last screen status read from a recognised cue; guess is set
	// while the screen has none (BUSY as a guess), since guessSince.
	cue        ptyapi.ExecutionStatus
	guess      bool
	guessSince time.Time
	// refreshTimer refreshes the reported status at refreshAt, when a rule
	// of status.go can change it with time alone.
	refreshTimer *time.Timer
	refreshAt    time.Time
	changed      chan struct{} // closed and replaced on every status change and evaluation
	subs         map[*subscriber]struct{}
	outputEnded  bool // the PTY reader has stopped; no more subscribers

	ptmx    *os.File
	writeMu sync.Mutex

	emuMu    sync.Mutex
	emu      emulator
	inSeq    atomic.Uint64 // output chunks read from the PTY
	outSeq   atomic.Uint64 // output chunks the emulator has processed
	emuBytes atomic.Uint64 // output bytes the emulator has processed
	emuQ     *backlog
	emuEnd   chan struct{} // closed when the emulator has processed all output
	replies  chan []byte   // the emulator's answers to terminal queries, to write to the CLI

	mirror  *nbwriter.Writer
	evalSig chan struct{}
	started chan struct{} // closed when Start has launched the CLI
	done    chan struct{} // closed when the CLI has exited
	readEnd chan struct{} // closed when the PTY reader has stopped
	stopCh  chan struct{} // closed by Close
}

var _ ptyapi.PTY = (*Host)(nil)

// New returns a Host; nothing runs until Start.
func New(opts Options) (*Host, error) {
	if opts.Registry == nil {
		return nil, errors.New("ptyhost: Options.Registry is required")
	}
	if opts.Home == "" {
		opts.Home = DefaultHome
	}
	if opts.WorkDir == "" {
		opts.WorkDir = DefaultWorkDir
	}
	if opts.BaseEnv == nil {
		opts.BaseEnv = []string{"PATH=" + DefaultPath, "LANG=C.UTF-8"}
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	if opts.SubscriberBuffer <= 0 {
		opts.SubscriberBuffer = DefaultSubscriberBuffer
	}
	if opts.SubscriberGrace <= 0 {
		opts.SubscriberGrace = DefaultSubscriberGrace
	}
	if opts.MirrorBuffer <= 0 {
		opts.MirrorBuffer = DefaultMirrorBuffer
	}
	if opts.Waiter == nil {
		opts.Waiter = directWaiter{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Host{
		opts: opts, log: log, screen: ptyapi.StatusStarting, status: ptyapi.StatusStarting, since: time.Now(),
		changed: make(chan struct{}), subs: map[*subscriber]struct{}{},
		evalSig: make(chan struct{}, 1), started: make(chan struct{}), done: make(chan struct{}), readEnd: make(chan struct{}),
		stopCh: make(chan struct{}), emuQ: newBacklog(emuBacklogBytes), emuEnd: make(chan struct{}),
		replies: make(chan []byte, 64),
	}, nil
}

// directWaiter waits on the process itself (not PID 1).
type directWaiter struct{}

func (directWaiter) Start(cmd *exec.Cmd) (func() (syscall.WaitStatus, error), error) {
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	return func() (syscall.WaitStatus, error) {
		err := cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return 0, fmt.Errorf("wait: %w", err)
		}
		return cmd.ProcessState.Sys().(syscall.WaitStatus), nil
	}, nil
}

// Start launches the CLI described by req.
func (h *Host) Start(ctx context.Context, req ptyapi.StartRequest) (ptyapi.StartResponse, error) {
	if err := ctx.Err(); err != nil {
		return ptyapi.StartResponse{}, fmt.Errorf("start: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != stateNew {
		return ptyapi.StartResponse{}, ptyapi.ErrAlreadyStarted
	}
	if req.Harness == "" {
		req.Harness = h.opts.DefaultHarness
	}
	adapter, err := h.opts.Registry.Lookup(req.Harness)
	if err != nil {
		return ptyapi.StartResponse{}, fmt.Errorf("start: %w", err)
	}
	if req.Cols == 0 {
		req.Cols = DefaultCols
	}
	if req.Rows == 0 {
		req.Rows = DefaultRows
	}
	if err := checkSize(req.Cols, req.Rows); err != nil {
		return ptyapi.StartResponse{}, err
	}
	if req.WorkDir == "" {
		req.WorkDir = h.opts.WorkDir
	}
	if st, err := os.Stat(req.WorkDir); err != nil || !st.IsDir() {
		return ptyapi.StartResponse{}, ptyapi.Errorf(ptyapi.ErrInvalidArgument, "workDir %q is not a directory", req.WorkDir)
	}
	req = withProviderEnv(adapter, req)
	lreq := resumeOrFresh(adapter, harness.LaunchRequest{StartRequest: req, Home: h.opts.Home, WorkDir: req.WorkDir})
	if err := h.prepareHome(adapter, lreq); err != nil {
		return ptyapi.StartResponse{}, err
	}
	launch, err := adapter.Launch(lreq)
	if err != nil {
		return ptyapi.StartResponse{}, fmt.Errorf("start: %w", err)
	}
	env := h.childEnv(launch, req)
	path, err := lookPath(launch.Path, env)
	if err != nil {
		return ptyapi.StartResponse{}, ptyapi.Errorf(ptyapi.ErrInvalidArgument, "harness %s: %v", adapter.Name(), err)
	}
	// Messages an earlier run of this session accepted but its CLI never recorded go first (the outbox reads the
	// session store with h.readTranscript, which parses with h.adapter).
	h.adapter = adapter
	ob, again, err := openOutbox(h.opts.Home, req.WorkDir, launch.SessionID, adapter, h.readTranscript, h.log)
	if err != nil {
		h.log.Warn("no outbox: accepted messages will not outlive this container", "err", err)
	}
	ptmx, err := h.spawn(path, launch.Args, env, req)
	if err != nil {
		ob.close()
		return ptyapi.StartResponse{}, err
	}
	h.outbox, h.queue = ob, again
	h.ptmx = ptmx
	h.adapter, h.policy, h.harnessName = adapter, adapter.Delivery(), adapter.Name()
	h.sessionID = launch.SessionID
	h.workDir = req.WorkDir
	h.state = stateRunning
	h.launchedAt = time.Now()
	h.since = h.launchedAt
	h.emu = vtscreen.New(req.Cols, req.Rows, h.queueReply)
	if h.opts.Mirror != nil {
		h.mirror = nbwriter.New(h.opts.Mirror, h.opts.MirrorBuffer)
	}
	close(h.started)
	h.notifyLocked()
	go h.answerQueries()
	go h.readLoop()
	go h.emuLoop()
	go h.evalLoop()
	go h.deliverLoop()
	if ob != nil {
		go h.watchOutbox(ob)
	}
	if launch.SessionID == "" {
		go h.discoverSession(adapter, lreq, h.launchedAt)
	}
	h.log.Info("cli started", "harness", adapter.Name(), "pid", h.pid, "sessionId", launch.SessionID,
		"resumed", launch.Resumed, "cols", req.Cols, "rows", req.Rows)
	return ptyapi.StartResponse{
		SessionID: launch.SessionID, Resumed: launch.Resumed, ResumeUnsupported: launch.ResumeUnsupported, PID: h.pid,
	}, nil
}

func checkSize(cols, rows int) error {
	if cols < 1 || rows < 1 || cols > MaxCols || rows > MaxRows {
		return ptyapi.Errorf(ptyapi.ErrInvalidArgument, "size %dx%d out of range 1..%dx1..%d", cols, rows, MaxCols, MaxRows)
	}
	return nil
}

// spawn opens the PTY and starts the CLI on it in its own session. Called with h.mu held.
func (h *Host) spawn(path string, args, env []string, req ptyapi.StartRequest) (*os.File, error) {
	master, tty, err := openPTY()
	if err != nil {
		return nil, err
	}
	if err := setSize(master, req.Cols, req.Rows); err != nil {
		_ = master.Close()
		_ = tty.Close()
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Args[0] = filepath.Base(path)
	cmd.Env = env
	cmd.Dir = req.WorkDir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if c := h.opts.RunAs; c != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: []uint32{}}
		// Like login(1): the user owns its terminal.
		if err := os.Chown(tty.Name(), int(c.UID), int(c.GID)); err != nil {
			h.log.Warn("chown tty", "err", err)
		}
	}
	wait, err := h.opts.Waiter.Start(cmd)
	_ = tty.Close()
	if err != nil {
		_ = master.Close()
		return nil, ptyapi.Errorf(ptyapi.ErrInvalidArgument, "launch %s: %v", path, err)
	}
	h.pid = cmd.Process.Pid
	go h.waitExit(wait)
	return master, nil
}

// openPTY opens a PTY pair and returns a non-blocking, poller-backed master so
// that closing it unblocks a pending Read.
func openPTY() (master, tty *os.File, err error) {
	p, t, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	fd, err := unix.Dup(int(p.Fd()))
	_ = p.Close()
	if err != nil {
		_ = t.Close()
		return nil, nil, fmt.Errorf("dup pty: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		_ = t.Close()
		return nil, nil, fmt.Errorf("nonblock pty: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), t, nil
}

func setSize(f *os.File, cols, rows int) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("pty size: %w", err)
	}
	var ierr error
	err = sc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
	})
	if err == nil {
		err = ierr
	}
	if err != nil {
		return fmt.Errorf("pty size: %w", err)
	}
	return nil
}

// prepareHome creates the home and writes the harness's seed files.
func (h *Host) prepareHome(a harness.Adapter, req harness.LaunchRequest) error {
	if err := h.mkdirOwned(h.opts.Home); err != nil {
		return err
	}
	// A home bind-mounted from the host may arrive root-owned: the CLI user
	// must own its top directory to write its config and session store.
	if err := h.chown(h.opts.Home); err != nil {
		return err
	}
	files, err := a.SeedFiles(req)
	if err != nil {
		return fmt.Errorf("seed files: %w", err)
	}
	// Seed files are read and written through an os.Root on the home: the
	// guest runs as root, and a symbolic link the CLI planted in its home
	// must not lead a write out of it.
	root, err := os.OpenRoot(h.opts.Home)
	if err != nil {
		return fmt.Errorf("seed files: %w", err)
	}
	defer root.Close()
	for _, f := range files {
		rel := filepath.Clean("/" + f.Path)[1:]
		data := f.Data
		if existing, err := root.ReadFile(rel); err == nil {
			switch {
			case f.KeepExisting:
				continue
			case f.Merge != nil:
				if data, err = f.Merge(existing); err != nil {
					return fmt.Errorf("seed %s: merge: %w", f.Path, err)
				}
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("seed %s: %w", f.Path, err)
		}
		if err := h.mkdirOwned(filepath.Join(h.opts.Home, filepath.Dir(rel))); err != nil {
			return err
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o600
		}
		if err := h.replaceInRoot(root, rel, data, mode); err != nil {
			return fmt.Errorf("seed %s: %w", f.Path, err)
		}
	}
	return h.placeInstructions(a, req)
}

// mkdirOwned creates dir and its missing parents; those at or below Home are
// owned by RunAs.
func (h *Host) mkdirOwned(dir string) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	home := filepath.Clean(h.opts.Home)
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("create %s: %w", d, err)
		}
		if d == home || strings.HasPrefix(d, home+"/") {
			if err := h.chown(d); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *Host) chown(p string) error {
	if c := h.opts.RunAs; c != nil {
		if err := os.Lchown(p, int(c.UID), int(c.GID)); err != nil {
			return fmt.Errorf("chown %s: %w", p, err)
		}
	}
	return nil
}

// childEnv builds the CLI's environment: base, terminal, home, harness, request.
func (h *Host) childEnv(l harness.Launch, req ptyapi.StartRequest) []string {
	m := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := m[k]; !ok {
			order = append(order, k)
		}
		m[k] = v
	}
	for _, kv := range h.opts.BaseEnv {
		if k, v, ok := strings.Cut(kv, "="); ok {
			set(k, v)
		}
	}
	set("TERM", "xterm-256color")
	set("COLORTERM", "truecolor")
	set("HOME", h.opts.Home)
	set("USER", "agent")
	set("LOGNAME", "agent")
	for k, v := range l.Env {
		set(k, v)
	}
	for k, v := range req.Env {
		set(k, v)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+m[k])
	}
	return out
}

// lookPath resolves name on the child's PATH.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", fmt.Errorf("cli binary: %w", err)
		}
		return name, nil
	}
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(p) {
				cand := filepath.Join(dir, name)
				if st, err := os.Stat(cand); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
					return cand, nil
				}
			}
		}
	}
	return "", fmt.Errorf("cli binary %q not found on PATH", name)
}

// waitExit records the CLI's exit and cleans up its process group.
func (h *Host) waitExit(wait func() (syscall.WaitStatus, error)) {
	ws, err := wait()
	code := -1
	switch {
	case err != nil:
		h.log.Error("wait for cli", "err", err)
	case ws.Exited():
		code = ws.ExitStatus()
	case ws.Signaled():
		code = 128 + int(ws.Signal())
	}
	h.mu.Lock()
	pid := h.pid
	h.state = stateExited
	h.exitCode = &code
	dropped := len(h.queue)
	h.queue = nil
	h.setScreenLocked(ptyapi.StatusExited)
	if h.refreshTimer != nil {
		h.refreshTimer.Stop()
	}
	h.mu.Unlock()
	// Leftovers in the CLI's process group (tools it started) go with it.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	h.log.Info("cli exited", "pid", pid, "exitCode", code, "droppedMessages", dropped)
	close(h.done)
	// A process that left the group may keep the PTY open: stop reading soon.
	select {
	case <-h.readEnd:
	case <-time.After(2 * time.Second):
		_ = h.ptmx.Close()
	}
}

// Done is closed when the CLI has exited.
func (h *Host) Done() <-chan struct{} { return h.done }

// ExitCode returns the CLI's exit code once it has exited (128+signal when
// killed by a signal).
func (h *Host) ExitCode() (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.exitCode == nil {
		return 0, false
	}
	return *h.exitCode, true
}

// StopRequested reports whether Stop was called while the CLI ran, i.e. its
// exit was asked for rather than a crash.
func (h *Host) StopRequested() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stopAsked
}

// PID returns the CLI's process id (0 before Start).
func (h *Host) PID() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pid
}

// Stop implements ptyapi.PTY: SIGTERM to the CLI's process group, SIGKILL
// after the grace period (or when ctx ends first), then wait for the exit.
func (h *Host) Stop(ctx context.Context) error {
	h.mu.Lock()
	st, pid := h.state, h.pid
	if st == stateRunning {
		h.stopAsked = true
	}
	h.mu.Unlock()
	if st != stateRunning {
		return nil
	}
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop: sigterm: %w", err)
	}
	grace := time.NewTimer(h.opts.StopGrace)
	defer grace.Stop()
	select {
	case <-h.done:
		return nil
	case <-grace.C:
	case <-ctx.Done():
	}
	h.log.Warn("cli ignored SIGTERM, killing its process group", "pid", pid)
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop: sigkill: %w", err)
	}
	select {
	case <-h.done:
		return nil
	case <-time.After(10 * time.Second):
		return ptyapi.Errorf(ptyapi.ErrInternal, "cli pid %d did not exit after SIGKILL", pid)
	}
}

// Close stops the CLI and releases the PTY and background goroutines.
func (h *Host) Close() error {
	err := h.Stop(context.Background())
	h.mu.Lock()
	started := h.state != stateNew
	h.mu.Unlock()
	select {
	case <-h.stopCh:
	default:
		close(h.stopCh)
	}
	if started {
		_ = h.ptmx.Close()
		<-h.readEnd
		if h.mirror != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = h.mirror.Close(ctx)
		}
	}
	h.mu.Lock()
	ob := h.outbox
	h.mu.Unlock()
	ob.close()
	return err
}

// outboxPoll is how often the outbox watcher reads the session store for the messages the CLI recorded.
const outboxPoll = 250 * time.Millisecond

// watchOutbox marks the messages the CLI records done until it exits (then once more) or the host is closed.
func (h *Host) watchOutbox(o *outbox) {
	t := time.NewTicker(outboxPoll)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			o.catchUp()
		case <-h.done:
			o.catchUp() // what the CLI wrote before it exited
			return
		case <-h.stopCh:
			return
		}
	}
}

// discoverSession polls the harness's store for the session id of a CLI that
// could not be given one at launch.
func (h *Host) discoverSession(a harness.Adapter, req harness.LaunchRequest, since time.Time) {
	// Some CLIs write their session store only when the first message is
	// submitted, which may be long after launch: keep looking (less often
	// after the first two minutes) until found or the CLI exits.
	interval := 500 * time.Millisecond
	slowAfter := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-time.After(interval):
			if h.tryDiscover(a, req, since) {
				return
			}
			if time.Now().After(slowAfter) {
				interval = 5 * time.Second
			}
		case <-h.done:
			return
		}
	}
}

// tryDiscover looks once for the session id of a CLI that cannot have one
// pre-assigned and records it; it reports whether the id is known.
func (h *Host) tryDiscover(a harness.Adapter, req harness.LaunchRequest, since time.Time) bool {
	h.mu.Lock()
	known := h.sessionID != ""
	h.mu.Unlock()
	if known {
		return true
	}
	id, ok, err := a.DiscoverSession(req.Home, req.WorkDir, since)
	if err != nil {
		h.log.Warn("discover session", "err", err)
		return false
	}
	if !ok {
		return false
	}
	h.mu.Lock()
	if h.sessionID == "" {
		h.sessionID = id
		h.log.Info("session discovered", "sessionId", id)
		h.notifyLocked()
	}
	h.mu.Unlock()
	return true
}

// resumeOrFresh turns a resume of a session the CLI never wrote (no turn was
// taken before the pause or crash) into a fresh launch: there is nothing to
// resume, and CLIs refuse to resume a session they do not know. Harnesses that
// pre-assign session ids keep the same id.
func resumeOrFresh(a harness.Adapter, req harness.LaunchRequest) harness.LaunchRequest {
	if req.ResumeSession == "" {
		return req
	}
	path, err := a.SessionFile(req.Home, req.WorkDir, req.ResumeSession)
	if err != nil {
		return req
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return req
	}
	if a.Capabilities().PreassignSessionID {
		req.SessionID = req.ResumeSession
	}
	req.ResumeSession = ""
	return req
}

// withProviderEnv puts the request's provider access into the CLI's
// environment the way the adapter's CLI reads it (over any value the request
// env already names).
func withProviderEnv(a harness.Adapter, req ptyapi.StartRequest) ptyapi.StartRequest {
	m, ok := a.(harness.ProviderEnvMapper)
	if req.Provider == nil || !ok {
		return req
	}
	env := make(map[string]string, len(req.Env)+2)
	for k, v := range req.Env {
		env[k] = v
	}
	for k, v := range m.ProviderEnv(*req.Provider) {
		if v != "" {
			env[k] = v
		}
	}
	req.Env = env
	return req
}
