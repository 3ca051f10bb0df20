package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/google/uuid"

	"aicli.dev/aicli/guest/ptyapi"
)

// LaunchRequest is what an adapter needs to build a command line: the
// supervisor's StartRequest plus the resolved durable home and working directory.
type LaunchRequest struct {
	ptyapi.StartRequest
	// Home is the CLI's durable home directory (HOME), e.g. /home/agent.
	Home string
	// WorkDir is the resolved working directory.
	WorkDir string
}

// Launch is the command an adapter wants started under the PTY.
type Launch struct {
	// Path is the executable (absolute, or looked up on PATH).
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Env is the harness's own environment (merged over the base environment;
	// the request's Env is merged over this).
	Env map[string]string
	// SessionID is the native session id when known at launch.
	SessionID string
	// Resumed is true when Args contain the native resume invocation.
	Resumed bool
	// ResumeUnsupported is true when a resume was requested but the harness
	// cannot resume; the launch then starts a fresh session.
	ResumeUnsupported bool
}

// SeedFile is a config file written into the durable home before launch.
type SeedFile struct {
	// Path is relative to the home directory.
	Path string
	Data []byte
	Mode os.FileMode
	// KeepExisting leaves an existing file untouched (user or CLI edits win).
	KeepExisting bool
	// Merge, when set and the file exists, computes the content to write from
	// the existing content (e.g. add a trusted-folder entry to a JSON config
	// the CLI also writes). Data is used when the file does not exist.
	Merge func(existing []byte) ([]byte, error)
}

// Chunk is one piece of a formatted message and the pause to take after writing it.
type Chunk struct {
	Data  []byte
	Pause time.Duration
}

// DeliveryPolicy says when a queued message may be written to the CLI.
type DeliveryPolicy struct {
	// AcceptsQueuedInput: the CLI buffers input typed while it is BUSY, so
	// delivery need not wait for IDLE (never while WAITING_FOR_INPUT).
	AcceptsQueuedInput bool
	// SettleAfterSubmit is the minimum time after a delivery before the next
	// one may start, and the quiet time an IDLE screen must hold after a
	// delivery before it counts as the CLI having taken the message.
	SettleAfterSubmit time.Duration
	// StartupSettle is how long the first IDLE screen after the CLI starts
	// must hold before it counts (the status stays STARTING until then), for
	// a CLI that draws a ready-looking screen before it is ready. 0: at once.
	StartupSettle time.Duration
	// ReactWithin is how long after a message was submitted the CLI may still
	// look idle and yet be starting its turn. The status stays BUSY from the
	// message's acceptance until the CLI has been seen busy (or waiting) and
	// idle again; a message the CLI is never seen react to counts as handled
	// without a turn once ReactWithin has passed and its idle screen has been
	// quiet for a moment (at the latest after three times ReactWithin).
	// 0: DefaultReactWithin.
	ReactWithin time.Duration
}

// DefaultReactWithin is DeliveryPolicy.ReactWithin when unset: the CLIs
// driven so far show busy well within it.
const DefaultReactWithin = time.Second

// TranscriptEntry is one attributed utterance parsed from a native session
// store: the contract's entry plus the provider ids where the store has them.
type TranscriptEntry struct {
	ptyapi.TranscriptEntry
	// MessageID and RequestID are the provider ids where the store has them.
	MessageID string `json:"messageId,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	Model     string `json:"model,omitempty"`
}

// Capabilities are static facts about a harness.
type Capabilities struct {
	// PreassignSessionID: the CLI accepts a session id at launch.
	PreassignSessionID bool
	// Resume: the CLI has a native resume invocation.
	Resume bool
}

// Adapter is everything harness-specific the guest needs. Implementations are
// stateless and safe for concurrent use.
type Adapter interface {
	// Name is the harness name used in StartRequest.Harness.
	Name() string
	// Capabilities reports static facts about the CLI.
	Capabilities() Capabilities
	// SeedFiles returns the config files to write into the home before launch.
	SeedFiles(req LaunchRequest) ([]SeedFile, error)
	// InstructionsFile is the file, relative to home, where the CLI reads
	// standing instructions that apply to every project (its user-level
	// memory or AGENTS.md). At every launch the guest keeps the request's
	// Instructions there in a delimited block and removes the block when they
	// are empty, keeping anything else in the file (MergeInstructions).
	// Empty: the adapter delivers req.Instructions itself in Launch.
	InstructionsFile(home string) string
	// Launch builds the command line, including model, session id and, when
	// req.ResumeSession is set, the native resume invocation.
	Launch(req LaunchRequest) (Launch, error)
	// Classify reads the execution status from a rendered screen. ok=false
	// when the screen shows none of the harness's cues.
	Classify(screen ptyapi.Screen) (status ptyapi.ExecutionStatus, ok bool)
	// FormatMessage turns a message into the bytes to write, with pauses.
	FormatMessage(text string) []Chunk
	// Delivery returns the message delivery policy.
	Delivery() DeliveryPolicy
	// Quota parses quota metrics from a rendered screen; nil when none shown.
	Quota(screen ptyapi.Screen) []ptyapi.QuotaMetric
	// SessionStoreDir is where the CLI keeps its native sessions under home.
	SessionStoreDir(home, workDir string) string
	// DiscoverSession finds the session id of a CLI launched at or after
	// since, for harnesses that cannot pre-assign one. ok=false when not found yet.
	DiscoverSession(home, workDir string, since time.Time) (id string, ok bool, err error)
	// SessionFile returns the native store file of one session.
	SessionFile(home, workDir, sessionID string) (string, error)
	// ParseTranscript reads native session store content into attributed
	// entries. The guest follows a growing line-based store by feeding it one
	// complete line at a time, so it must accept a single line on its own
	// (every JSONL CLI's store allows that).
	ParseTranscript(r io.Reader) ([]TranscriptEntry, error)
}

// SanitizePaste makes text safe to send inside a bracketed paste
// (ptyapi.SanitizeMessage): no paste markers, no control characters but
// newline and tab, CR LF and CR as newlines, so a message can never end the
// paste early and be typed as keystrokes.
func SanitizePaste(text string) string { return ptyapi.SanitizeMessage(text) }

// ProviderEnvMapper is implemented by adapters whose CLI reads its provider
// base URL and API key from the environment: ProviderEnv returns the
// variables that express p in the CLI's own terms (names, URL suffixes).
type ProviderEnvMapper interface {
	ProviderEnv(p ptyapi.ProviderAccess) map[string]string
}

// StartScreener is implemented by adapters whose CLI keeps showing its
// idle-looking start screen for a while after the first message of a session
// was submitted (OpenCode, until the session exists). IsStartScreen reports
// whether s is that screen: on it a submitted message's turn has not ended,
// whatever was drawn since the submission.
type StartScreener interface {
	IsStartScreen(s ptyapi.Screen) bool
}

// StoreFollower is implemented by adapters whose CLI keeps its transcript in
// a store that is not a line-based file per session (e.g. a SQLite database).
// FollowStore calls fn for every entry of the current session from its
// start, then for each new one as the CLI commits it, until ctx ends or fn
// fails. sessionID is asked on every poll and may return "" until the session
// is known; when it changes, following starts again from the new session's
// start (the caller dedupes by entry id). It returns ctx's error or fn's error.
// The guest uses it instead of SessionFile and ParseTranscript when present.
type StoreFollower interface {
	FollowStore(ctx context.Context, home, workDir string, sessionID func() string,
		fn func(ptyapi.TranscriptEntry) error) error
}

// Registry maps harness names to adapters. Build one per process; it is
// read-only after construction.
type Registry struct {
	adapters map[string]Adapter
}

// NewRegistry returns a registry holding adapters; a duplicate name is an error.
func NewRegistry(adapters ...Adapter) (*Registry, error) {
	r := &Registry{adapters: make(map[string]Adapter, len(adapters))}
	for _, a := range adapters {
		if _, dup := r.adapters[a.Name()]; dup {
			return nil, fmt.Errorf("harness %q registered twice", a.Name())
		}
		r.adapters[a.Name()] = a
	}
	return r, nil
}

// Lookup returns the adapter for name, or an error wrapping ptyapi.ErrUnknownHarness.
func (r *Registry) Lookup(name string) (Adapter, error) {
	a, ok := r.adapters[name]
	if !ok {
		return nil, ptyapi.Errorf(ptyapi.ErrUnknownHarness, "%q (known: %v)", name, r.Names())
	}
	return a, nil
}

// Names lists the registered harness names, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.adapters))
	for n := range r.adapters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// BracketedPaste is the usual message delivery of a TUI CLI: the sanitised
// text as one bracketed paste, a pause the CLI needs to take the paste in,
// then Enter.
func BracketedPaste(text string, pause time.Duration) []Chunk {
	return []Chunk{
		{Data: []byte("\x1b[200~" + SanitizePaste(text) + "\x1b[201~"), Pause: pause},
		{Data: []byte("\r")},
	}
}

// SessionArgs is the session part of the command line of a CLI that takes
// `--resume <uuid>` to resume and `--session-id <uuid>` to pre-assign (a fresh
// uuid when the request names none). It returns the arguments, the session id
// and whether this is a native resume.
func SessionArgs(req LaunchRequest) (args []string, sessionID string, resumed bool, err error) {
	switch {
	case req.ResumeSession != "":
		if _, err := uuid.Parse(req.ResumeSession); err != nil {
			return nil, "", false, ptyapi.Errorf(ptyapi.ErrInvalidArgument, "resume session %q is not a uuid", req.ResumeSession)
		}
		return []string{"--resume", req.ResumeSession}, req.ResumeSession, true, nil
	case req.SessionID != "":
		if _, err := uuid.Parse(req.SessionID); err != nil {
			return nil, "", false, ptyapi.Errorf(ptyapi.ErrInvalidArgument, "session id %q is not a uuid", req.SessionID)
		}
		return []string{"--session-id", req.SessionID}, req.SessionID, false, nil
	default:
		id := uuid.NewString()
		return []string{"--session-id", id}, id, false, nil
	}
}
