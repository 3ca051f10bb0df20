package fake

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"aicli.dev/aicli/internal/runtime"
)

// ExitKilled is the exit code a container gets when its process is killed (128 + SIGKILL), as with Docker.
const ExitKilled = 137

// eventBuffer bounds each Events subscriber's queue; a subscriber that falls this far behind is cut off with
// ErrSlowSubscriber rather than blocking the runtime.
const eventBuffer = 1024

// ErrSlowSubscriber ends an Events stream whose consumer fell more than eventBuffer events behind.
var ErrSlowSubscriber = errors.New("fake runtime: events subscriber too slow")

// Process is what a ProcessFunc gets for one container run.
type Process struct {
	// ID is the container id.
	ID string
	// Spec is the spec the container was created from.
	Spec runtime.ContainerSpec
	// Stdout collects output; it is what Logs returns.
	Stdout io.Writer
}

// ProcessFunc is run in its own goroutine as a container's main process when the container starts. Its ctx is
// cancelled when the container is stopped (the SIGTERM analogue) or removed; the returned int is the exit code.
// A function that ignores ctx past the stop grace is treated as SIGKILLed: the container exits with ExitKilled
// (the goroutine itself cannot be killed and is left to finish; its result is then ignored).
type ProcessFunc func(ctx context.Context, p Process) int

// Op names a Runtime method for error injection.
type Op string

// Ops that can fail on demand.
const (
	OpCreate  Op = "create"
	OpStart   Op = "start"
	OpStop    Op = "stop"
	OpRemove  Op = "remove"
	OpInspect Op = "inspect"
	OpList    Op = "list"
	OpLogs    Op = "logs"
	OpPing    Op = "ping"
	OpEvents  Op = "events"
	OpStats   Op = "stats"
)

// Runtime is the fake. The zero value is not usable; call New. Each instance is independent.
type Runtime struct {
	process ProcessFunc
	now     func() time.Time
	images  map[string]bool // nil: every image exists

	mu         sync.Mutex
	seq        int
	containers map[string]*container // by id
	specs      []runtime.ContainerSpec
	subs       map[*subscriber]struct{}
	failures   map[Op][]error
}

type container struct {
	stats runtime.ContainerStats // set by SetStats
	state runtime.ContainerState
	spec  runtime.ContainerSpec
	logs  bytes.Buffer
	run   *run // nil unless running
}

// run is one execution of a container's process.
type run struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the run has ended (process returned, or killed)
}

type subscriber struct {
	selector map[string]string
	ch       chan runtime.Event
	errc     chan error
	closed   bool
}

// Option configures a Runtime.
type Option func(*Runtime)

// WithProcess sets the function run as every container's main process. Without it a started container runs until
// it is stopped and then exits 0.
func WithProcess(fn ProcessFunc) Option { return func(r *Runtime) { r.process = fn } }

// WithImages restricts Create to these image references (anything else fails with runtime.ErrImageNotFound);
// without it every image exists.
func WithImages(refs ...string) Option {
	return func(r *Runtime) {
		r.images = map[string]bool{}
		for _, ref := range refs {
			r.images[ref] = true
		}
	}
}

// WithClock sets the time source for timestamps (default time.Now).
func WithClock(now func() time.Time) Option { return func(r *Runtime) { r.now = now } }

// New returns an empty fake runtime.
func New(opts ...Option) *Runtime {
	r := &Runtime{
		now:        time.Now,
		containers: map[string]*container{},
		subs:       map[*subscriber]struct{}{},
		failures:   map[Op][]error{},
	}
	for _, o := range opts {
		o(r)
	}
	if r.process == nil {
		r.process = func(ctx context.Context, _ Process) int { <-ctx.Done(); return 0 }
	}
	return r
}

var (
	_ runtime.Runtime     = (*Runtime)(nil)
	_ runtime.StatsReader = (*Runtime)(nil)
)

// SetStats sets the CPU time and memory that Stats reports for container id (zero until set).
func (r *Runtime) SetStats(id string, cpuNanos uint64, memoryBytes int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.lookup(id)
	if err != nil {
		return err
	}
	c.stats = runtime.ContainerStats{CPUNanos: cpuNanos, MemoryBytes: memoryBytes}
	return nil
}

// Stats implements runtime.StatsReader with the values of SetStats, read at the fake's clock.
func (r *Runtime) Stats(ctx context.Context, id string) (runtime.ContainerStats, error) {
	if err := ctx.Err(); err != nil {
		return runtime.ContainerStats{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.injected(OpStats); err != nil {
		return runtime.ContainerStats{}, err
	}
	c, err := r.lookup(id)
	if err != nil {
		return runtime.ContainerStats{}, err
	}
	st := c.stats
	st.Read = r.now()
	return st, nil
}

// FailNext makes the next call of op return err (calls queue up: each injected error is used once).
func (r *Runtime) FailNext(op Op, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures[op] = append(r.failures[op], err)
}

// Specs returns a copy of every spec passed to a successful Create, in order.
func (r *Runtime) Specs() []runtime.ContainerSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.specs)
}

// injected pops an injected error for op; r.mu must be held.
func (r *Runtime) injected(op Op) error {
	q := r.failures[op]
	if len(q) == 0 {
		return nil
	}
	r.failures[op] = q[1:]
	return fmt.Errorf("fake runtime %s: %w", op, q[0])
}

// lookup finds a container by id or name; r.mu must be held.
func (r *Runtime) lookup(ref string) (*container, error) {
	if c, ok := r.containers[ref]; ok {
		return c, nil
	}
	for _, c := range r.containers {
		if c.state.Name == ref {
			return c, nil
		}
	}
	return nil, &runtime.NotFoundError{Ref: ref}
}

// Create implements runtime.Runtime.
func (r *Runtime) Create(ctx context.Context, spec runtime.ContainerSpec) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.injected(OpCreate); err != nil {
		return "", err
	}
	if spec.Image == "" {
		return "", errors.New("fake runtime create: image is required")
	}
	if r.images != nil && !r.images[spec.Image] {
		return "", fmt.Errorf("fake runtime create %s: %w: %s", spec.Name, runtime.ErrImageNotFound, spec.Image)
	}
	r.seq++
	id := fmt.Sprintf("fake%060d", r.seq)
	name := spec.Name
	if name == "" {
		name = "fake-" + id[len(id)-8:]
	}
	for _, c := range r.containers {
		if c.state.Name == name {
			return "", fmt.Errorf("fake runtime create: %w: %q is used by %s", runtime.ErrNameConflict, name, c.state.ID)
		}
	}
	spec = cloneSpec(spec)
	spec.Name = name
	if spec.Network == "" {
		spec.Network = runtime.NetworkNone
	}
	r.containers[id] = &container{
		spec: spec,
		state: runtime.ContainerState{
			ID: id, Name: name, Image: spec.Image, Labels: maps.Clone(spec.Labels),
			Status: "created", CreatedAt: r.now(),
		},
	}
	r.specs = append(r.specs, spec)
	return id, nil
}

// Start implements runtime.Runtime. Starting a running container is a no-op.
func (r *Runtime) Start(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.injected(OpStart); err != nil {
		return err
	}
	c, err := r.lookup(id)
	if err != nil {
		return err
	}
	if c.run != nil {
		return nil
	}
	pctx, cancel := context.WithCancel(context.Background())
	ru := &run{cancel: cancel, done: make(chan struct{})}
	c.run = ru
	c.state.Running = true
	c.state.Status = "running"
	c.state.ExitCode = 0
	c.state.StartedAt = r.now()
	c.state.FinishedAt = time.Time{}
	c.state.OOMKilled = false
	r.emit(runtime.EventStart, c)
	p := Process{ID: c.state.ID, Spec: cloneSpec(c.spec), Stdout: &logWriter{r: r, c: c}}
	go func() {
		code := r.process(pctx, p)
		r.exit(c, ru, code)
	}()
	return nil
}

// exit records the end of run ru with code unless that run already ended (killed).
func (r *Runtime) exit(c *container, ru *run, code int) { r.exitRun(c, ru, code, false) }

// exitRun is exit with the OOM-killed flag.
func (r *Runtime) exitRun(c *container, ru *run, code int, oom bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.run != ru {
		return
	}
	c.state.OOMKilled = oom
	ru.cancel()
	c.run = nil
	c.state.Running = false
	c.state.Status = "exited"
	c.state.ExitCode = code
	c.state.FinishedAt = r.now()
	close(ru.done)
	r.emit(runtime.EventDie, c)
}

// Stop implements runtime.Runtime: it cancels the process context, waits up to grace for the process to return,
// then marks the container killed (ExitKilled).
func (r *Runtime) Stop(ctx context.Context, id string, grace time.Duration) error {
	r.mu.Lock()
	if err := r.injected(OpStop); err != nil {
		r.mu.Unlock()
		return err
	}
	c, err := r.lookup(id)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	ru := c.run
	r.mu.Unlock()
	if ru != nil {
		ru.cancel()
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-ru.done:
		case <-t.C:
			r.exit(c, ru, ExitKilled)
		case <-ctx.Done():
			return fmt.Errorf("fake runtime stop %s: %w", id, ctx.Err())
		}
		r.mu.Lock()
		r.emit(runtime.EventStop, c)
		r.mu.Unlock()
	}
	return nil
}

// Crash ends a running container's process as if it died on its own with exitCode. The process function's ctx
// is cancelled and its later result ignored. See also OOMKill.
func (r *Runtime) Crash(id string, exitCode int) error { return r.crash(id, exitCode, false) }

// OOMKill ends a running container as the kernel's OOM killer would: exit code ExitKilled and OOMKilled set.
func (r *Runtime) OOMKill(id string) error { return r.crash(id, ExitKilled, true) }

func (r *Runtime) crash(id string, exitCode int, oom bool) error {
	r.mu.Lock()
	c, err := r.lookup(id)
	var ru *run
	if err == nil {
		ru = c.run
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if ru == nil {
		return fmt.Errorf("fake runtime crash %s: not running", id)
	}
	r.exitRun(c, ru, exitCode, oom)
	return nil
}

// Remove implements runtime.Runtime: force-removes (killing a running process); absent is not an error.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	if err := r.injected(OpRemove); err != nil {
		r.mu.Unlock()
		return err
	}
	c, err := r.lookup(id)
	if err != nil {
		r.mu.Unlock()
		return nil
	}
	ru := c.run
	r.mu.Unlock()
	if ru != nil {
		r.exit(c, ru, ExitKilled)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.containers[c.state.ID]; !ok {
		return nil // removed concurrently
	}
	delete(r.containers, c.state.ID)
	r.emit(runtime.EventDestroy, c)
	return nil
}

// Inspect implements runtime.Runtime.
func (r *Runtime) Inspect(ctx context.Context, id string) (runtime.ContainerState, error) {
	if err := ctx.Err(); err != nil {
		return runtime.ContainerState{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.injected(OpInspect); err != nil {
		return runtime.ContainerState{}, err
	}
	c, err := r.lookup(id)
	if err != nil {
		return runtime.ContainerState{}, err
	}
	return cloneState(c.state), nil
}

// Spec returns the spec a container was created from (with defaults applied).
func (r *Runtime) Spec(id string) (runtime.ContainerSpec, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.lookup(id)
	if err != nil {
		return runtime.ContainerSpec{}, err
	}
	return cloneSpec(c.spec), nil
}

// List implements runtime.Runtime; results are ordered by creation.
func (r *Runtime) List(ctx context.Context, labelSelector map[string]string) ([]runtime.ContainerState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.injected(OpList); err != nil {
		return nil, err
	}
	var out []runtime.ContainerState
	for _, c := range r.containers {
		if runtime.MatchLabels(c.state.Labels, labelSelector) {
			out = append(out, cloneState(c.state))
		}
	}
	slices.SortFunc(out, func(a, b runtime.ContainerState) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Events implements runtime.Runtime. Events are delivered in the order they happened; only events after the
// call are delivered.
func (r *Runtime) Events(ctx context.Context, labelSelector map[string]string) (<-chan runtime.Event, <-chan error) {
	s := &subscriber{
		selector: maps.Clone(labelSelector),
		ch:       make(chan runtime.Event, eventBuffer),
		errc:     make(chan error, 1),
	}
	r.mu.Lock()
	if err := r.injected(OpEvents); err != nil {
		r.closeSub(s, err)
		r.mu.Unlock()
		return s.ch, s.errc
	}
	r.subs[s] = struct{}{}
	r.mu.Unlock()
	go func() {
		<-ctx.Done()
		r.mu.Lock()
		defer r.mu.Unlock()
		r.closeSub(s, nil)
	}()
	return s.ch, s.errc
}

// Subscribers returns the number of open Events streams.
func (r *Runtime) Subscribers() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.subs)
}

// BreakEvents ends every open Events stream with err, as an engine restart would.
func (r *Runtime) BreakEvents(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.subs {
		r.closeSub(s, err)
	}
}

// closeSub ends a subscription; r.mu must be held.
func (r *Runtime) closeSub(s *subscriber, err error) {
	if s.closed {
		return
	}
	s.closed = true
	delete(r.subs, s)
	if err != nil {
		s.errc <- err
	}
	close(s.ch)
	close(s.errc)
}

// emit sends an event about c to every matching subscriber; r.mu must be held.
func (r *Runtime) emit(t runtime.EventType, c *container) {
	ev := runtime.Event{Type: t, ID: c.state.ID, Name: c.state.Name, Labels: maps.Clone(c.state.Labels), Time: r.now()}
	if t == runtime.EventDie {
		ev.ExitCode = c.state.ExitCode
	}
	for s := range r.subs {
		if !runtime.MatchLabels(ev.Labels, s.selector) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			r.closeSub(s, ErrSlowSubscriber)
		}
	}
}

// Logs implements runtime.Runtime: everything the container's processes wrote to Stdout so far.
func (r *Runtime) Logs(ctx context.Context, id string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.injected(OpLogs); err != nil {
		return nil, err
	}
	c, err := r.lookup(id)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(bytes.Clone(c.logs.Bytes()))), nil
}

// Ping implements runtime.Runtime.
func (r *Runtime) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.injected(OpPing)
}

// logWriter appends to a container's log buffer under the runtime lock.
type logWriter struct {
	r *Runtime
	c *container
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return w.c.logs.Write(p)
}

func cloneSpec(s runtime.ContainerSpec) runtime.ContainerSpec {
	s.Labels = maps.Clone(s.Labels)
	s.Env = slices.Clone(s.Env)
	s.Cmd = slices.Clone(s.Cmd)
	s.Mounts = slices.Clone(s.Mounts)
	return s
}

func cloneState(s runtime.ContainerState) runtime.ContainerState {
	s.Labels = maps.Clone(s.Labels)
	return s
}
