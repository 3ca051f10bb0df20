package toolwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
)

// Op is what a Request asks for.
type Op string

// Operations.
const (
	OpCall     Op = "call"     // run the tool
	OpHelp     Op = "help"     // print the tool's usage
	OpDelegate Op = "delegate" // delegate a narrowed grant of the tool to a peer agent
)

// Exit codes of a call besides the backend's own.
const (
	ExitTimeout    = 124 // the backend ran past its timeout and was killed
	ExitRefused    = 126 // the call was refused or broke a limit; Exit.Message names the reason
	ExitNotGranted = 127 // the tool is not granted to this agent (or does not exist)
)

// Refusal reasons in Exit.Refused set by the transport itself (the supervisor's authorizer adds its own).
const (
	RefusedMalformed     = "malformed_request"
	RefusedArgsTooLarge  = "args_too_large"
	RefusedStdinTooLarge = "stdin_too_large"
	RefusedOutputLimit   = "output_too_large"
	RefusedTooManyCalls  = "too_many_calls"
	RefusedNotGranted    = "not_granted"
	RefusedInternal      = "internal_error"
	RefusedUnavailable   = "unavailable"
)

// DelegateArgs are the narrowing a delegate request asks for.
type DelegateArgs struct {
	// Peer is the agent that receives the delegated grant.
	Peer string `json:"peer"`
	// Params are parameters to pin (k → v).
	Params map[string]string `json:"params,omitempty"`
	// CallsPerHour caps the delegated grant's calls (0: the parent's cap).
	CallsPerHour int `json:"callsPerHour,omitempty"`
	// TTL is how long the delegated grant lives, as a Go duration ("" : as long as the parent).
	TTL string `json:"ttl,omitempty"`
}

// Request is the caller's first frame.
type Request struct {
	// Op is call, help or delegate.
	Op Op `json:"op"`
	// Tool is the tool called (or, for delegate, delegated).
	Tool string `json:"tool"`
	// Args are the call's arguments.
	Args []string `json:"args,omitempty"`
	// Token is the capability; aicli-tool sends none, the guest's relay puts it in.
	Token string `json:"token,omitempty"`
	// Delegate is set for OpDelegate.
	Delegate *DelegateArgs `json:"delegate,omitempty"`
}

// Exit is the server's last frame.
type Exit struct {
	// Code is the exit code aicli-tool exits with.
	Code int `json:"code"`
	// Message, when set, is printed on the caller's standard error.
	Message string `json:"message,omitempty"`
	// Refused is the machine-readable reason of a refusal.
	Refused string `json:"refused,omitempty"`
}

// toolName is the shape of a granted tool's name (v1alpha1.ToolGrant.name).
var toolName = regexp.MustCompile(`^[a-z0-9][-a-z0-9_.]*$`)

// ValidToolName reports whether name can name a tool.
func ValidToolName(name string) bool { return len(name) <= 64 && toolName.MatchString(name) }

// ErrArgsTooLarge is returned by CheckArgs.
var ErrArgsTooLarge = errors.New("arguments exceed the limit")

// CheckArgs enforces MaxArgs and MaxArgBytes.
func CheckArgs(args []string) error {
	if len(args) > MaxArgs {
		return fmt.Errorf("%w: %d arguments (limit %d)", ErrArgsTooLarge, len(args), MaxArgs)
	}
	n := 0
	for _, a := range args {
		n += len(a)
	}
	if n > MaxArgBytes {
		return fmt.Errorf("%w: %d bytes of arguments (limit %d)", ErrArgsTooLarge, n, MaxArgBytes)
	}
	return nil
}

// Validate checks a request's shape and limits (not its authority).
func (r Request) Validate() error {
	switch r.Op {
	case OpCall, OpHelp:
		if r.Delegate != nil {
			return fmt.Errorf("op %s carries no delegate arguments", r.Op)
		}
	case OpDelegate:
		if r.Delegate == nil || r.Delegate.Peer == "" {
			return errors.New("op delegate needs a peer")
		}
	default:
		return fmt.Errorf("unknown op %q", r.Op)
	}
	if !ValidToolName(r.Tool) {
		return fmt.Errorf("invalid tool name %q", r.Tool)
	}
	return CheckArgs(r.Args)
}

// WriteJSON writes v as one frame of type t (TypeRequest or TypeExit).
func WriteJSON(w io.Writer, t Type, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s frame: %w", t, err)
	}
	return WriteFrame(w, t, body)
}

// Decode decodes a control frame's payload into v, rejecting unknown fields and trailing data.
func Decode(f Frame, v any) error {
	dec := json.NewDecoder(bytes.NewReader(f.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode %s frame: %w", f.Type, err)
	}
	if dec.More() {
		return fmt.Errorf("decode %s frame: trailing data after JSON value", f.Type)
	}
	return nil
}

// ReadRequest reads one frame and decodes it as a Request; it does not validate it.
func ReadRequest(r io.Reader) (Request, error) {
	f, err := ReadFrame(r)
	if err != nil {
		return Request{}, err
	}
	if f.Type != TypeRequest {
		return Request{}, fmt.Errorf("want a request frame, got %s", f.Type)
	}
	var req Request
	if err := Decode(f, &req); err != nil {
		return Request{}, err
	}
	return req, nil
}
