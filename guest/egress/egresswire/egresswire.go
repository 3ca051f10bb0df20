package egresswire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxFrame bounds the JSON body of a Header or Reply frame.
const MaxFrame = 1024

// ErrFrameTooLarge is returned for a frame whose body exceeds MaxFrame.
var ErrFrameTooLarge = errors.New("egress frame exceeds the size limit")

// Kind says what an egress stream carries.
type Kind string

// Stream kinds.
const (
	// KindProvider carries plain HTTP that the supervisor reverse-proxies to the agent's provider endpoint.
	KindProvider Kind = "provider"
	// KindProxy carries a raw byte tunnel to Header.Target (an HTTP CONNECT, or one plain-HTTP proxy request).
	KindProxy Kind = "proxy"
	// KindTool carries one mounted-tool call in the guest/toolwire framing (docs/decisions/0020); the supervisor
	// answers with toolwire frames, not a Reply.
	KindTool Kind = "tool"
)

// Header is the guest's first frame on an egress stream.
type Header struct {
	// Kind is provider, proxy or tool.
	Kind Kind `json:"kind"`
	// Target is "host:port" for KindProxy and empty for KindProvider.
	Target string `json:"target,omitempty"`
}

// Reason is a machine-readable refusal reason.
type Reason string

// Refusal reasons carried in Reply.Reason (and passed to the supervisor's Denied callback).
const (
	ReasonMalformedHeader Reason = "malformed_header" // unreadable, oversized, unknown kind or bad target syntax
	ReasonNoPolicy        Reason = "no_policy"        // the supervisor holds no egress policy for the conversation
	ReasonNoProvider      Reason = "no_provider"      // provider stream, but the agent names no provider endpoint
	ReasonHostNotAllowed  Reason = "host_not_allowed" // the host is not on the allow-list
	ReasonPortNotAllowed  Reason = "port_not_allowed" // the host is allowed, the port is not
	ReasonTooManyStreams  Reason = "too_many_streams" // the conversation's concurrent egress stream limit is reached
	ReasonDialFailed      Reason = "dial_failed"      // allowed, but the supervisor could not connect
	ReasonHostInternal    Reason = "host_internal"    // an allowed domain resolves only to loopback, link-local or unspecified addresses
	ReasonShuttingDown    Reason = "shutting_down"    // the supervisor's egress server is closing
)

// Reply is the supervisor's answer to a Header. After a refusal the supervisor closes the stream.
type Reply struct {
	// OK is true when payload may flow.
	OK bool `json:"ok"`
	// Reason says why the stream was refused.
	Reason Reason `json:"reason,omitempty"`
	// Message is a human-readable explanation.
	Message string `json:"message,omitempty"`
}

// WriteFrame writes v as one frame: a 2-byte big-endian length followed by its JSON encoding.
func WriteFrame(w io.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode egress frame: %w", err)
	}
	if len(body) > MaxFrame {
		return fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, len(body))
	}
	buf := make([]byte, 2+len(body))
	binary.BigEndian.PutUint16(buf, uint16(len(body)))
	copy(buf[2:], body)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write egress frame: %w", err)
	}
	return nil
}

// ReadFrame reads exactly one frame into v, reading nothing past it, and rejects unknown JSON fields and
// trailing data.
func ReadFrame(r io.Reader, v any) error {
	var hdr [2]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return fmt.Errorf("read egress frame header: %w", err)
	}
	n := binary.BigEndian.Uint16(hdr[:])
	if int(n) > MaxFrame {
		return fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return fmt.Errorf("read egress frame body: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode egress frame: %w", err)
	}
	if dec.More() {
		return errors.New("decode egress frame: trailing data after JSON value")
	}
	return nil
}
