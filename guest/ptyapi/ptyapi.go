// Package ptyapi is the AiCliPty contract (docs/concepts.md#the-guest-and-the-side-channel): the drive surface a guest
// serves for the one AI CLI it owns, and that the supervisor consumes through a
// remote proxy over the side channel. Both ends import only this package.
package ptyapi

import (
	"context"
	"io"
	"time"
)

// ExecutionStatus is what the CLI is doing, read from its rendered screen.
type ExecutionStatus string

const (
	// StatusBusy: the CLI is working on a turn (spinner, "esc to interrupt",
	// streaming reply), or a message was accepted by SendMessage and the CLI's
	// turn for it has not ended yet (it is queued, being typed, or the CLI has
	// not reacted to it yet): an accepted message is never followed by IDLE
	// before its reply.
	StatusBusy ExecutionStatus = "BUSY"
	// StatusIdle: the CLI shows its input prompt and accepts a new message.
	StatusIdle ExecutionStatus = "IDLE"
	// StatusWaitingForInput: a permission, trust or selection prompt waits for an answer. Not idle.
	StatusWaitingForInput ExecutionStatus = "WAITING_FOR_INPUT"
	// StatusStarting: the CLI was launched and has not shown its prompt yet.
	StatusStarting ExecutionStatus = "STARTING"
	// StatusExited: the CLI process has ended.
	StatusExited ExecutionStatus = "EXITED"
)

// Key names a non-printable key for SendKeys.
type Key string

const (
	KeyEnter     Key = "Enter"
	KeyEscape    Key = "Escape"
	KeyTab       Key = "Tab"
	KeyBackspace Key = "Backspace"
	KeyUp        Key = "Up"
	KeyDown      Key = "Down"
	KeyLeft      Key = "Left"
	KeyRight     Key = "Right"
	KeyCtrlC     Key = "Ctrl-C"
	KeyCtrlD     Key = "Ctrl-D"
	KeyCtrlL     Key = "Ctrl-L"
)

// StartRequest is the launch part of the rehydration bundle the supervisor sends
// after the handshake. The guest's harness adapter turns it into a command line.
type StartRequest struct {
	// Harness names the adapter (fake, claude, codex, gemini, opencode).
	Harness string `json:"harness"`
	// SessionID pre-assigns the CLI's native session id where the harness supports it.
	SessionID string `json:"sessionId,omitempty"`
	// ResumeSession is the native session reference to resume; empty starts fresh.
	ResumeSession string `json:"resumeSession,omitempty"`
	// Model, when set, is passed to the CLI the way the harness expects.
	Model string `json:"model,omitempty"`
	// Env is extra, non-secret environment for the CLI (plus the model credential, docs/concepts.md#capabilities-and-secrets).
	Env map[string]string `json:"env,omitempty"`
	// Args are extra CLI arguments appended after the harness's own flags.
	Args []string `json:"args,omitempty"`
	// WorkDir is the CLI's working directory (default /workspace).
	WorkDir string `json:"workDir,omitempty"`
	// Cols and Rows size the PTY (default 120x40).
	Cols int `json:"cols,omitempty"`
	Rows int `json:"rows,omitempty"`
	// Provider, when set, is how the CLI reaches its model provider; the
	// harness adapter maps it onto the CLI's own settings.
	Provider *ProviderAccess `json:"provider,omitempty"`
	// Instructions are the agent's standing instructions (its persona, and
	// whatever else the supervisor adds to the rehydration bundle), written
	// where the CLI reads standing instructions; empty writes none.
	Instructions string `json:"instructions,omitempty"`
	// Tools are the granted tool names on the CLI's PATH; a harness that asks
	// before running shell commands pre-approves exactly these.
	Tools []string `json:"tools,omitempty"`
}

// ProviderAccess is how a CLI reaches its model provider.
type ProviderAccess struct {
	// BaseURL is the endpoint as the CLI must use it (in a container: the
	// guest's loopback provider port, which egress forwards to the real one).
	BaseURL string `json:"baseURL,omitempty"`
	// APIKey is the model credential, the one secret a CLI may hold (docs/concepts.md#capabilities-and-secrets).
	APIKey string `json:"apiKey,omitempty"`
}

// StartResponse reports what was launched.
type StartResponse struct {
	// SessionID is the CLI's native session id when known at launch (pre-assigned or captured).
	SessionID string `json:"sessionId,omitempty"`
	// Resumed is true when the harness's native resume invocation was used.
	Resumed bool `json:"resumed"`
	// ResumeUnsupported is set when a resume was asked for but the harness cannot resume.
	ResumeUnsupported bool `json:"resumeUnsupported,omitempty"`
	// PID is the CLI's process id inside the container.
	PID int `json:"pid"`
}

// Screen is a rendered terminal screen.
type Screen struct {
	Cols    int      `json:"cols"`
	Rows    int      `json:"rows"`
	Lines   []string `json:"lines"`
	CursorX int      `json:"cursorX"`
	CursorY int      `json:"cursorY"`
}

// StatusInfo is the CLI's liveness and execution status.
type StatusInfo struct {
	Status    ExecutionStatus `json:"status"`
	Alive     bool            `json:"alive"`
	ExitCode  *int            `json:"exitCode,omitempty"`
	Harness   string          `json:"harness,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	// PendingMessages counts SendMessage calls accepted but not yet delivered.
	PendingMessages int `json:"pendingMessages"`
	// Since is when Status last changed (or the CLI started).
	Since time.Time `json:"since"`
}

// QuotaMetric is one quota the CLI reports (tokens, requests or a percentage).
type QuotaMetric struct {
	Name     string     `json:"name"`
	Unit     string     `json:"unit"`
	Max      float64    `json:"max"`
	Current  float64    `json:"current"`
	Window   string     `json:"window,omitempty"`
	ResetsAt *time.Time `json:"resetsAt,omitempty"`
}

// Quota is what the CLI reports about its spend/quota, possibly empty.
type Quota struct {
	Metrics []QuotaMetric `json:"metrics"`
}

// PTY is the AiCliPty contract. Implementations: the guest's local PTY and the
// supervisor's remote proxy over the side channel.
type PTY interface {
	Start(ctx context.Context, req StartRequest) (StartResponse, error)
	// SendString writes text to the PTY as typed, without Enter.
	SendString(ctx context.Context, s string) error
	// SendKeys writes named keys in order.
	SendKeys(ctx context.Context, keys ...Key) error
	// SendMessage delivers a whole message atomically (formatted for the harness,
	// e.g. bracketed paste, then submitted). Concurrent senders queue and never
	// interleave. Delivery is held until IDLE unless the harness accepts queued
	// input. It returns once the message is accepted (queued), not when answered.
	SendMessage(ctx context.Context, text string) error
	RenderScreen(ctx context.Context) (Screen, error)
	Resize(ctx context.Context, cols, rows int) error
	Status(ctx context.Context) (StatusInfo, error)
	Quota(ctx context.Context) (Quota, error)
	// Subscribe streams the raw PTY output bytes from now on until ctx ends or the
	// reader is closed.
	Subscribe(ctx context.Context) (io.ReadCloser, error)
	// Stop ends the CLI (SIGTERM to its process group, then SIGKILL after grace).
	Stop(ctx context.Context) error
}

// TranscriptEntry is one utterance parsed by the harness adapter from the
// CLI's native session store: clean text, never raw PTY bytes.
type TranscriptEntry struct {
	// ID is the native store's id of the line (stable across re-reads).
	ID string `json:"id"`
	// Role is user, assistant, tool or system.
	Role string `json:"role"`
	// Text is the clean text.
	Text string `json:"text"`
	// Timestamp is the CLI's own timestamp of the line.
	Timestamp time.Time `json:"timestamp"`
}

// Transcript roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleSystem    = "system"
)

// StatusWatcher is implemented by PTYs that push status changes: fn gets the
// current status first, then the status after every change of any of its
// fields but Since, until ctx ends or fn returns an error (returned as is).
// Changes are coalesced: while fn runs, further changes collapse into the
// latest status, so a slow fn skips intermediate states, never the last one.
// The stream does not end when the CLI exits (EXITED is a status like the
// others); a nil return means the implementation ended it cleanly (e.g. the
// serving end shut down) and a caller that still wants changes watches again.
type StatusWatcher interface {
	WatchStatus(ctx context.Context, fn func(StatusInfo) error) error
}

// TranscriptFollower is implemented by PTYs that can stream the CLI's native
// transcript: every entry of the current session from its beginning, then
// each new one as the CLI writes it (following a session-id change after a
// resume), until ctx ends or fn returns an error.
type TranscriptFollower interface {
	FollowTranscript(ctx context.Context, fn func(TranscriptEntry) error) error
}
