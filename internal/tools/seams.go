package tools

import (
	"context"
	"io"
	"time"

	"aicli.dev/aicli/guest/toolwire"
	"aicli.dev/aicli/internal/grants"
)

// Caller is who presents a call, as the gateway knows it from the connection.
type Caller struct {
	// ConversationUID is the conversation the guest connection was admitted for.
	ConversationUID string
	// GuestFingerprint is the guest key's fingerprint from the side-channel handshake.
	GuestFingerprint string
}

// Authorizer decides a call. A *Refusal error refuses it with that reason and message (exit 126); any other error
// refuses it as an internal error, and is logged.
type Authorizer interface {
	Authorize(ctx context.Context, c Caller, r toolwire.Request) (*Authorization, error)
}

// Authorization is what an authorised call runs with.
type Authorization struct {
	// Namespace, Agent, Conversation and Grant name where the authority comes from.
	Namespace, Agent, Conversation, Grant string
	// Tool is the granted tool as it runs: its class's backend and secrets,
	// timeoutSeconds, usage, parameters and attenuation.
	Tool grants.ResolvedTool
	// Secrets maps a secretRef name to its value, resolved by the authorizer.
	Secrets map[string][]byte
	// Args are what the backend receives after its fixed args: BackendArgs of the caller's arguments (canonical when
	// the tool has pins or declared parameters).
	Args []string
	// Builtin marks a built-in tool (grants.Builtins): Options.Builtins runs it.
	Builtin bool
	// ConversationUID is the calling conversation's uid.
	ConversationUID string
}

// Refusal is an authorizer's (or the server's own) refusal of a call.
type Refusal struct {
	// Reason is machine-readable (e.g. revoked, expired, param_mismatch).
	Reason string
	// Message is shown to the caller.
	Message string
	// Namespace, Grant and Conversation attribute the refused call to a
	// grant when the authorizer got that far (empty otherwise).
	Namespace, Grant, Conversation string
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Message }

// CallRecord is what happened in one call; it never holds arguments or secrets.
type CallRecord struct {
	Caller Caller
	// Auth is nil when the call was refused before authorization succeeded.
	Auth *Authorization
	// Tool is the tool named in the request (empty when the request was unreadable).
	Tool string
	// Op is the request's op.
	Op toolwire.Op
	// At is when the call arrived.
	At time.Time
	// Duration is how long it took.
	Duration time.Duration
	// ExitCode is the exit code sent to the caller.
	ExitCode int
	// BytesIn counts argument and stdin bytes; BytesOut stdout and stderr bytes sent.
	BytesIn, BytesOut int64
	// Refused is the refusal reason, empty for a call that ran.
	Refused string
	// Namespace, Grant and Conversation attribute a refused call (from the
	// Refusal) when Auth is nil.
	Namespace, Grant, Conversation string
}

// Recorder receives every call's record (authorised or refused), once per call: before the caller is sent its exit
// code, or when the call ends if the caller went away first. Record returns once the record is durable, so that a
// call whose result the caller saw is counted even when the supervisor dies right after. It may be called
// concurrently.
type Recorder interface {
	Record(CallRecord)
}

// Builtins runs the built-in tools (mail, recall, transcripts) host-side, with the caller's stdin and output
// streams; its exit code is the call's. It checks what the call reaches (a peer, a bucket, a conversation)
// against the agent's permissions as they are now.
type Builtins interface {
	Run(ctx context.Context, auth *Authorization, stdin io.Reader, stdout, stderr io.Writer) (exitCode int, err error)
}

// Delegator serves `aicli-tool delegate`: token is the caller's delegate capability. The message is printed to the
// caller. A *Refusal error refuses it (exit 126).
type Delegator interface {
	// Delegate hands a narrowed slice of tool, authorised by token, to d.Peer.
	Delegate(ctx context.Context, c Caller, token, tool string, d toolwire.DelegateArgs) (message string, err error)
}
