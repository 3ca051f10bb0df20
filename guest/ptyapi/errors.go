package ptyapi

import (
	"errors"
	"fmt"
)

// MaxMessageBytes is the largest text SendMessage accepts (256 KiB). Larger
// messages are rejected with ErrMessageTooLarge before anything is queued.
const MaxMessageBytes = 256 << 10

// ErrorCode is the stable, wire-visible name of a contract error. The guest's
// HTTP server sends it in error bodies and the remote proxy maps it back to the
// sentinel errors below, so callers on either side use errors.Is.
type ErrorCode string

// Error codes of the AiCliPty contract.
const (
	CodeMessageTooLarge ErrorCode = "message_too_large"
	CodeNotStarted      ErrorCode = "not_started"
	CodeAlreadyStarted  ErrorCode = "already_started"
	CodeExited          ErrorCode = "exited"
	CodeUnknownHarness  ErrorCode = "unknown_harness"
	CodeInvalidArgument ErrorCode = "invalid_argument"
	CodeSlowSubscriber  ErrorCode = "slow_subscriber"
	CodeUnsupported     ErrorCode = "unsupported"
	CodeInternal        ErrorCode = "internal"
)

// Sentinel errors of the contract. Implementations wrap them (fmt.Errorf with
// %w) so that errors.Is works locally and after a round trip over the wire.
var (
	// ErrMessageTooLarge: the message exceeds MaxMessageBytes.
	ErrMessageTooLarge = &CodedError{Code: CodeMessageTooLarge, Message: "message too large"}
	// ErrNotStarted: the CLI has not been started yet.
	ErrNotStarted = &CodedError{Code: CodeNotStarted, Message: "cli not started"}
	// ErrAlreadyStarted: Start was called on a PTY whose CLI already ran.
	ErrAlreadyStarted = &CodedError{Code: CodeAlreadyStarted, Message: "cli already started"}
	// ErrExited: the CLI process has ended; input cannot be delivered.
	ErrExited = &CodedError{Code: CodeExited, Message: "cli exited"}
	// ErrUnknownHarness: no adapter is registered under the requested harness name.
	ErrUnknownHarness = &CodedError{Code: CodeUnknownHarness, Message: "unknown harness"}
	// ErrInvalidArgument: a request field is out of range or malformed.
	ErrInvalidArgument = &CodedError{Code: CodeInvalidArgument, Message: "invalid argument"}
	// ErrSlowSubscriber ends a Subscribe stream whose reader fell too far
	// behind; the PTY never waits for a reader.
	ErrSlowSubscriber = &CodedError{Code: CodeSlowSubscriber, Message: "subscriber too slow, stream cut off"}
	// ErrUnsupported: the implementation does not offer this operation
	// (e.g. FollowTranscript on a PTY that is not a TranscriptFollower).
	ErrUnsupported = &CodedError{Code: CodeUnsupported, Message: "unsupported operation"}
	// ErrInternal: anything else that went wrong inside the implementation.
	ErrInternal = &CodedError{Code: CodeInternal, Message: "internal error"}
)

// CodedError is a contract error carrying its wire code.
type CodedError struct {
	Code    ErrorCode
	Message string
}

// Error implements error.
func (e *CodedError) Error() string { return e.Message }

// Is matches any CodedError with the same code, so an error decoded from the
// wire (a fresh *CodedError) matches the package sentinel.
func (e *CodedError) Is(target error) bool {
	var t *CodedError
	if errors.As(target, &t) {
		return t.Code == e.Code
	}
	return false
}

// CodeOf returns the contract code of err, or CodeInternal when err carries none.
func CodeOf(err error) ErrorCode {
	var ce *CodedError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return CodeInternal
}

// ErrorForCode returns the sentinel for code, or ErrInternal for an unknown code.
func ErrorForCode(code ErrorCode) error {
	for _, e := range []*CodedError{ErrMessageTooLarge, ErrNotStarted, ErrAlreadyStarted, ErrExited,
		ErrUnknownHarness, ErrInvalidArgument, ErrSlowSubscriber, ErrUnsupported} {
		if e.Code == code {
			return e
		}
	}
	return ErrInternal
}

// Errorf wraps a sentinel with context: Errorf(ErrInvalidArgument, "cols %d", c).
func Errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}
