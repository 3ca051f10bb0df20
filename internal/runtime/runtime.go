package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Label keys the supervisor stamps on every container it creates (label everything, look up by label, sweep labelled orphans).
const (
	// LabelSupervisor holds the id of the supervisor that owns the container.
	LabelSupervisor = "aicli.dev/supervisor"
	// LabelNamespace holds the namespace of the conversation's agent.
	LabelNamespace = "aicli.dev/namespace"
	// LabelAgent holds the agent name.
	LabelAgent = "aicli.dev/agent"
	// LabelConversation holds the conversation name.
	LabelConversation = "aicli.dev/conversation"
)

// NetworkNone is the default network mode: the container has a loopback interface only.
const NetworkNone = "none"

// Mount is a bind mount of a host path into the container.
type Mount struct {
	// HostPath is the absolute path on the host (a directory for side-channel sockets, a re-created socket is invisible through a bind-mounted file).
	HostPath string
	// ContainerPath is the absolute path inside the container.
	ContainerPath string
	// ReadOnly mounts the path read-only.
	ReadOnly bool
}

// ContainerSpec is everything needed to create one container. It is a plain value: callers build it, runtimes
// only read it.
type ContainerSpec struct {
	// Name is the container name; it must be unique on the engine.
	Name string
	// Image is the image reference (e.g. an imagebuild tag).
	Image string
	// Labels identify the owner: supervisor id, namespace, agent, conversation.
	Labels map[string]string
	// Env is the container environment as KEY=VALUE strings.
	Env []string
	// Cmd overrides the image's CMD (arguments to the entrypoint).
	Cmd []string
	// User overrides the image's user ("" keeps the image default; the guest runs as root and drops for the CLI).
	User string
	// WorkingDir overrides the image's working directory.
	WorkingDir string
	// Mounts are bind mounts (home, workspace, side-channel directory, tools).
	Mounts []Mount
	// Network is the network mode; "" means NetworkNone.
	Network string
	// MemoryBytes caps memory; 0 means the runtime's default.
	MemoryBytes int64
	// PidsLimit caps the number of processes; 0 means the runtime's default.
	PidsLimit int64
	// NanoCPUs caps CPU in units of 1e-9 CPUs; 0 means unlimited.
	NanoCPUs int64
	// Tty allocates a terminal for the container's stdio.
	Tty bool
	// OpenStdin keeps stdin open.
	OpenStdin bool
}

// ContainerState is an observation of one container.
type ContainerState struct {
	// ID is the engine's container id.
	ID string
	// Name is the container name without a leading slash.
	Name string
	// Image is the image reference the container was created from.
	Image string
	// Labels are the container's labels.
	Labels map[string]string
	// Running is true while the container's main process runs.
	Running bool
	// ExitCode is the main process's exit code once it has exited.
	ExitCode int
	// CreatedAt is when the container was created.
	CreatedAt time.Time
	// StartedAt is when the container was last started (zero if never).
	StartedAt time.Time
	// FinishedAt is when the container last exited (zero if never).
	FinishedAt time.Time
	// Status is the engine's state word: created, running, exited, dead, …
	Status string
	// OOMKilled is true when the kernel's OOM killer ended the last run (memory limit reached).
	OOMKilled bool
	// Error is the engine's error for the last run, e.g. why it failed to start ("" if none).
	Error string
}

// EventType is the kind of a container lifecycle event.
type EventType string

const (
	// EventStart is emitted when a container's main process starts.
	EventStart EventType = "start"
	// EventDie is emitted when a container's main process exits, for any reason.
	EventDie EventType = "die"
	// EventStop is emitted when a container was stopped through the engine.
	EventStop EventType = "stop"
	// EventDestroy is emitted when a container is removed.
	EventDestroy EventType = "destroy"
)

// Event is one container lifecycle event.
type Event struct {
	// Type is what happened.
	Type EventType
	// ID is the container id.
	ID string
	// Name is the container name.
	Name string
	// Labels are the container's labels at the time of the event.
	Labels map[string]string
	// ExitCode is set for EventDie.
	ExitCode int
	// Time is when the engine recorded the event.
	Time time.Time
}

// Runtime creates and observes containers. Implementations must be safe for concurrent use.
type Runtime interface {
	// Create creates (but does not start) a container and returns its id.
	Create(ctx context.Context, spec ContainerSpec) (id string, err error)
	// Start starts a created or exited container.
	Start(ctx context.Context, id string) error
	// Stop sends SIGTERM and, after grace, SIGKILL. Stopping a stopped container is not an error.
	Stop(ctx context.Context, id string, grace time.Duration) error
	// Remove force-removes a container; removing an absent container returns nil.
	Remove(ctx context.Context, id string) error
	// Inspect observes one container by id or name; an absent container yields an error matching ErrNotFound.
	Inspect(ctx context.Context, id string) (ContainerState, error)
	// List returns every container (running or not) matching labelSelector (see MatchLabels).
	List(ctx context.Context, labelSelector map[string]string) ([]ContainerState, error)
	// Events streams start/die/stop/destroy events of containers matching labelSelector until ctx ends.
	// The event channel is closed when the stream ends; a terminal error (if any) is sent on the error channel first.
	Events(ctx context.Context, labelSelector map[string]string) (<-chan Event, <-chan error)
	// Logs returns the container's combined stdout/stderr so far (demultiplexed), without following.
	Logs(ctx context.Context, id string) (io.ReadCloser, error)
	// Ping checks that the engine is reachable.
	Ping(ctx context.Context) error
}

// ContainerStats is one sample of a container's resource use.
type ContainerStats struct {
	// CPUNanos is the CPU time the container used since it started, over all cores, in nanoseconds.
	CPUNanos uint64
	// MemoryBytes is the memory in use without the reclaimable page cache (what docker stats shows).
	MemoryBytes int64
	// Read is when the engine took the sample.
	Read time.Time
}

// StatsReader samples a container's resource use. It is apart from Runtime because only the supervisor's info
// endpoint needs it.
type StatsReader interface {
	// Stats returns one sample of container id without waiting for a second one; an absent container yields an
	// error matching ErrNotFound.
	Stats(ctx context.Context, id string) (ContainerStats, error)
}

// ErrNotFound is matched (errors.Is) by errors about absent containers.
var ErrNotFound = errors.New("container not found")

// NotFoundError says a container does not exist. It matches ErrNotFound.
type NotFoundError struct {
	// Ref is the id or name that was looked up.
	Ref string
}

// Error implements error.
func (e *NotFoundError) Error() string { return fmt.Sprintf("container %q not found", e.Ref) }

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// IsNotFound reports whether err says a container is absent.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// ErrImageNotFound is matched (errors.Is) by Create errors saying the image does not exist locally (nothing is
// pulled: build it, e.g. with imagebuild.Builder.Ensure, and retry).
var ErrImageNotFound = errors.New("image not found")

// ErrNameConflict is matched (errors.Is) by Create errors saying the container name is already taken (for
// example by a container a crashed supervisor created but never recorded: look it up by label and adopt or remove).
var ErrNameConflict = errors.New("container name already in use")

// MatchLabels reports whether labels satisfies selector: every selector key must be present, and its value must
// equal the selector value unless that is "" (key present with any value). An empty selector matches everything.
// Runtimes implement List and Events with exactly these semantics.
func MatchLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		got, ok := labels[k]
		if !ok || (v != "" && got != v) {
			return false
		}
	}
	return true
}
