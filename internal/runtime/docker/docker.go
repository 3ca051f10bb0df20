package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"aicli.dev/aicli/internal/runtime"
)

// Defaults applied when a ContainerSpec leaves a limit at zero.
const (
	// DefaultMemoryBytes caps a container's memory (swap is not added on top).
	DefaultMemoryBytes int64 = 2 << 30
	// DefaultPidsLimit caps the number of processes and threads in a container.
	DefaultPidsLimit int64 = 512
	// DefaultTmpfsOptions are the mount options of the tmpfs at /tmp when the root filesystem is read-only.
	DefaultTmpfsOptions = "rw,nosuid,nodev,size=256m,mode=1777"
)

// GuestCapabilities is the minimum capability set the guest needs as root PID 1: SETUID and SETGID to launch the
// CLI as its unprivileged user (setgroups/setgid/setuid), KILL to signal that user's process group on stop,
// DAC_OVERRIDE to seed the harness's files into the durable home (mode 0700, owned by the CLI user) and CHOWN to
// hand those files and the CLI's terminal to the CLI user. Everything else is dropped. None of these reaches the
// CLI: it runs as a non-root user, so execve clears its capability sets. The e2e suite proves each is required.
var GuestCapabilities = []string{"SETUID", "SETGID", "KILL", "DAC_OVERRIDE", "CHOWN"}

// Options tunes the runtime's security defaults. The zero value means: defaults above, GuestCapabilities,
// read-only root filesystem.
type Options struct {
	// CapAdd replaces GuestCapabilities when non-nil (all others stay dropped).
	CapAdd []string
	// WritableRootfs turns off the read-only root filesystem.
	WritableRootfs bool
	// TmpfsOptions replaces DefaultTmpfsOptions for /tmp.
	TmpfsOptions string
	// StopSignal is sent by Stop before the grace period; "" means SIGTERM.
	StopSignal string
}

// Runtime is the Docker-backed runtime.Runtime.
type Runtime struct {
	cli  client.APIClient
	opts Options
}

var _ runtime.Runtime = (*Runtime)(nil)

// New wraps an existing Engine API client (it should negotiate the API version: the engine here speaks 1.41).
func New(cli client.APIClient, opts Options) *Runtime {
	return &Runtime{cli: cli, opts: opts}
}

// NewFromEnv builds a client from the DOCKER_* environment with API version negotiation and wraps it. Close the
// returned client when done.
func NewFromEnv(opts Options) (*Runtime, *client.Client, error) {
	cli, err := NewClient()
	if err != nil {
		return nil, nil, err
	}
	return New(cli, opts), cli, nil
}

// NewClient returns an Engine API client configured from the environment with API version negotiation.
func NewClient() (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return cli, nil
}

// Client returns the underlying Engine API client.
func (r *Runtime) Client() client.APIClient { return r.cli }

// HostConfig returns the host configuration Create uses for spec: exposed so callers and tests can see exactly
// which security settings apply.
func (r *Runtime) HostConfig(spec runtime.ContainerSpec) *container.HostConfig {
	network := spec.Network
	if network == "" {
		network = runtime.NetworkNone
	}
	mem := spec.MemoryBytes
	if mem <= 0 {
		mem = DefaultMemoryBytes
	}
	pids := spec.PidsLimit
	if pids <= 0 {
		pids = DefaultPidsLimit
	}
	caps := GuestCapabilities
	if r.opts.CapAdd != nil {
		caps = r.opts.CapAdd
	}
	noInit := false
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(network),
		SecurityOpt:    []string{"no-new-privileges"},
		CapDrop:        []string{"ALL"},
		CapAdd:         slices.Clone(caps),
		ReadonlyRootfs: !r.opts.WritableRootfs,
		Init:           &noInit,
		Resources: container.Resources{
			Memory:     mem,
			MemorySwap: mem,
			PidsLimit:  &pids,
			NanoCPUs:   spec.NanoCPUs,
		},
	}
	if hc.ReadonlyRootfs {
		opts := r.opts.TmpfsOptions
		if opts == "" {
			opts = DefaultTmpfsOptions
		}
		hc.Tmpfs = map[string]string{"/tmp": opts}
	}
	for _, m := range spec.Mounts {
		hc.Mounts = append(hc.Mounts, mount.Mount{
			Type:     mount.TypeBind,
			Source:   m.HostPath,
			Target:   m.ContainerPath,
			ReadOnly: m.ReadOnly,
		})
	}
	return hc
}

// Create implements runtime.Runtime.
func (r *Runtime) Create(ctx context.Context, spec runtime.ContainerSpec) (string, error) {
	if spec.Image == "" {
		return "", errors.New("docker create: image is required")
	}
	cfg := &container.Config{
		Image:        spec.Image,
		Labels:       maps.Clone(spec.Labels),
		Env:          slices.Clone(spec.Env),
		Cmd:          slices.Clone(spec.Cmd),
		User:         spec.User,
		WorkingDir:   spec.WorkingDir,
		Tty:          spec.Tty,
		OpenStdin:    spec.OpenStdin,
		AttachStdout: true,
		AttachStderr: true,
	}
	resp, err := r.cli.ContainerCreate(ctx, cfg, r.HostConfig(spec), nil, nil, spec.Name)
	if err != nil {
		if cerrdefs.IsConflict(err) {
			return "", fmt.Errorf("docker create %s: %w: %w", spec.Name, runtime.ErrNameConflict, err)
		}
		if cerrdefs.IsNotFound(err) && strings.Contains(strings.ToLower(err.Error()), "no such image") {
			// (A missing network is a not-found too; only the image case is typed.)
			return "", fmt.Errorf("docker create %s: %w: %w", spec.Name, runtime.ErrImageNotFound, err)
		}
		return "", fmt.Errorf("docker create %s from %s: %w", spec.Name, spec.Image, err)
	}
	return resp.ID, nil
}

// Start implements runtime.Runtime.
func (r *Runtime) Start(ctx context.Context, id string) error {
	if err := r.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return wrap("start", id, err)
	}
	return nil
}

// Stop implements runtime.Runtime: the stop signal (SIGTERM), then SIGKILL after grace (rounded up to seconds,
// the engine's resolution).
func (r *Runtime) Stop(ctx context.Context, id string, grace time.Duration) error {
	secs := int((grace + time.Second - 1) / time.Second)
	if grace <= 0 {
		secs = 0
	}
	err := r.cli.ContainerStop(ctx, id, container.StopOptions{Signal: r.opts.StopSignal, Timeout: &secs})
	if err != nil {
		return wrap("stop", id, err)
	}
	return nil
}

// Remove implements runtime.Runtime (force, with anonymous volumes; absent is nil).
func (r *Runtime) Remove(ctx context.Context, id string) error {
	err := r.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) && !isRemovalInProgress(err) {
		return fmt.Errorf("docker remove %s: %w", id, err)
	}
	return nil
}

// isRemovalInProgress recognises the engine's conflict when another remove of the same container is running.
func isRemovalInProgress(err error) bool {
	return cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "is already in progress")
}

// Inspect implements runtime.Runtime.
func (r *Runtime) Inspect(ctx context.Context, id string) (runtime.ContainerState, error) {
	resp, err := r.cli.ContainerInspect(ctx, id)
	if err != nil {
		return runtime.ContainerState{}, wrap("inspect", id, err)
	}
	return stateOf(resp), nil
}

// InspectRaw returns the engine's full inspect document (tests and diagnostics).
func (r *Runtime) InspectRaw(ctx context.Context, id string) (container.InspectResponse, error) {
	resp, err := r.cli.ContainerInspect(ctx, id)
	if err != nil {
		return container.InspectResponse{}, wrap("inspect", id, err)
	}
	return resp, nil
}

// List implements runtime.Runtime. It filters by label on the engine and inspects each match for exit codes and
// timestamps; containers removed in between are skipped.
func (r *Runtime) List(ctx context.Context, labelSelector map[string]string) ([]runtime.ContainerState, error) {
	sums, err := r.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: labelFilters(labelSelector)})
	if err != nil {
		return nil, fmt.Errorf("docker list: %w", err)
	}
	out := make([]runtime.ContainerState, 0, len(sums))
	for _, s := range sums {
		st, err := r.Inspect(ctx, s.ID)
		if runtime.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// eventActions are the container actions Events forwards.
var eventActions = []events.Action{events.ActionStart, events.ActionDie, events.ActionStop, events.ActionDestroy}

// attributesNotLabels are the keys the engine adds to a container event's attributes beside the labels.
var attributesNotLabels = []string{"name", "image", "exitCode", "signal", "execDuration"}

// Events implements runtime.Runtime. Labels in events are the event attributes minus the engine's own keys
// (name, image, exitCode, signal, execDuration): a container label with one of those keys is not reported.
func (r *Runtime) Events(ctx context.Context, labelSelector map[string]string) (<-chan runtime.Event, <-chan error) {
	f := labelFilters(labelSelector)
	f.Add("type", string(events.ContainerEventType))
	for _, a := range eventActions {
		f.Add("event", string(a))
	}
	msgs, errs := r.cli.Events(ctx, events.ListOptions{Filters: f})
	out := make(chan runtime.Event)
	errc := make(chan error, 1)
	go func() {
		defer close(errc)
		defer close(out)
		for {
			select {
			case m := <-msgs:
				ev := eventOf(m)
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			case err := <-errs:
				if err != nil && ctx.Err() == nil {
					errc <- fmt.Errorf("docker events: %w", err)
				}
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, errc
}

func eventOf(m events.Message) runtime.Event {
	labels := maps.Clone(m.Actor.Attributes)
	for _, k := range attributesNotLabels {
		delete(labels, k)
	}
	ev := runtime.Event{
		Type:   runtime.EventType(m.Action),
		ID:     m.Actor.ID,
		Name:   m.Actor.Attributes["name"],
		Labels: labels,
		Time:   time.Unix(0, m.TimeNano),
	}
	if code, err := strconv.Atoi(m.Actor.Attributes["exitCode"]); err == nil {
		ev.ExitCode = code
	}
	return ev
}

// Logs implements runtime.Runtime: stdout and stderr so far, demultiplexed into one stream for non-TTY containers.
func (r *Runtime) Logs(ctx context.Context, id string) (io.ReadCloser, error) {
	resp, err := r.cli.ContainerInspect(ctx, id)
	if err != nil {
		return nil, wrap("logs", id, err)
	}
	rc, err := r.cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return nil, wrap("logs", id, err)
	}
	if resp.Config != nil && resp.Config.Tty {
		return rc, nil
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, pw, rc)
		_ = rc.Close()
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// Ping implements runtime.Runtime.
func (r *Runtime) Ping(ctx context.Context) error {
	if _, err := r.cli.Ping(ctx); err != nil {
		return fmt.Errorf("docker ping: %w", err)
	}
	return nil
}

// Stats implements runtime.StatsReader with one one-shot sample (no second sample is awaited, so the engine's
// CPU percentage is not computed here: callers take the CPU time delta between two samples).
func (r *Runtime) Stats(ctx context.Context, id string) (runtime.ContainerStats, error) {
	resp, err := r.cli.ContainerStatsOneShot(ctx, id)
	if err != nil {
		return runtime.ContainerStats{}, wrap("stats", id, err)
	}
	defer resp.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return runtime.ContainerStats{}, fmt.Errorf("docker stats %s: decoding: %w", id, err)
	}
	return runtime.ContainerStats{CPUNanos: s.CPUStats.CPUUsage.TotalUsage, MemoryBytes: memoryInUse(s.MemoryStats), Read: s.Read}, nil
}

// memoryInUse is usage minus the inactive page cache, as the docker CLI computes it (cgroup v1 and v2 keys).
func memoryInUse(m container.MemoryStats) int64 {
	cache := m.Stats["total_inactive_file"]
	if v, ok := m.Stats["inactive_file"]; ok {
		cache = v
	}
	if cache > m.Usage {
		return 0
	}
	return int64(min(m.Usage-cache, 1<<63-1))
}

func labelFilters(sel map[string]string) filters.Args {
	f := filters.NewArgs()
	for k, v := range sel {
		if v == "" {
			f.Add("label", k)
		} else {
			f.Add("label", k+"="+v)
		}
	}
	return f
}

// wrap turns the engine's "no such container" into runtime.NotFoundError and wraps everything else (a start can
// fail with another not-found, e.g. a missing network, while the container exists).
func wrap(op, id string, err error) error {
	if cerrdefs.IsNotFound(err) && strings.Contains(strings.ToLower(err.Error()), "no such container") {
		return fmt.Errorf("docker %s: %w", op, &runtime.NotFoundError{Ref: id})
	}
	return fmt.Errorf("docker %s %s: %w", op, id, err)
}

func stateOf(resp container.InspectResponse) runtime.ContainerState {
	st := runtime.ContainerState{}
	if resp.ContainerJSONBase != nil {
		st.ID = resp.ID
		st.Name = strings.TrimPrefix(resp.Name, "/")
		st.Image = resp.Image
		st.CreatedAt = parseTime(resp.Created)
		if s := resp.State; s != nil {
			st.Running = s.Running
			st.ExitCode = s.ExitCode
			st.Status = string(s.Status)
			st.StartedAt = parseTime(s.StartedAt)
			st.FinishedAt = parseTime(s.FinishedAt)
			st.OOMKilled = s.OOMKilled
			st.Error = s.Error
		}
	}
	if resp.Config != nil {
		st.Image = resp.Config.Image
		st.Labels = maps.Clone(resp.Config.Labels)
	}
	return st
}

// parseTime reads the engine's RFC 3339 timestamps; the engine's "never" (year 1) becomes the zero time.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}
