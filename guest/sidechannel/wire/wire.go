package wire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ALPN is the TLS application protocol both ends require; it versions the protocol below.
const ALPN = "aicli-gw/1"

// ContainerDir is where the supervisor bind-mounts the per-conversation socket directory inside the container.
const ContainerDir = "/run/aicli"

// SocketName is the file name of the side-channel socket inside that directory.
const SocketName = "gw.sock"

// MaxFrame bounds a hello or reply frame; anything larger is a protocol violation.
const MaxFrame = 16 << 10

// ErrFrameTooLarge is returned by ReadFrame and WriteFrame for a frame above MaxFrame.
var ErrFrameTooLarge = errors.New("side-channel frame exceeds the size limit")

// Hello is the guest's first frame after the TLS handshake. Exactly one of LaunchToken (first connection of a
// guest) and ReconnectSecret (re-dial of a guest that was admitted before, with the same key) is set.
type Hello struct {
	// ConversationID names the conversation this guest runs.
	ConversationID string `json:"conversationId"`
	// LaunchToken is the single-use token from the guest's bootstrap environment.
	LaunchToken string `json:"token,omitempty"`
	// ReconnectSecret is the secret the supervisor handed out in the reply to the first hello.
	ReconnectSecret string `json:"reconnectSecret,omitempty"`
}

// Reason is a machine-readable refusal reason carried in a Reply and used to label refusal counters.
type Reason string

// Refusal reasons. The wire ones are sent to the guest; the others only label supervisor-side logs and counters
// for connections that never got as far as a hello.
const (
	ReasonMalformedHello       Reason = "malformed_hello"
	ReasonTokenUnknown         Reason = "token_unknown" // unknown, already spent, or released
	ReasonTokenExpired         Reason = "token_expired"
	ReasonConversationMismatch Reason = "conversation_mismatch"
	ReasonReconnectRefused     Reason = "reconnect_refused"
	ReasonUnavailable          Reason = "unavailable" // the supervisor could not record the admission
	ReasonTLSHandshake         Reason = "tls_handshake"
	ReasonNoClientCert         Reason = "no_client_cert"
	ReasonBadClientCert        Reason = "bad_client_cert"
	ReasonProtocol             Reason = "protocol"
	ReasonTimeout              Reason = "timeout"
	ReasonDisconnected         Reason = "disconnected"
	ReasonStreamLimit          Reason = "stream_limit" // an admitted guest held more streams than allowed
)

// Reply is the supervisor's answer to a Hello. On refusal the supervisor closes the connection after sending it.
type Reply struct {
	// OK is true when the guest was admitted; the connection then carries a yamux session.
	OK bool `json:"ok"`
	// Reason says why the guest was refused.
	Reason Reason `json:"reason,omitempty"`
	// Message is a human-readable refusal explanation without secrets.
	Message string `json:"message,omitempty"`
	// ReconnectSecret lets this guest key re-dial the same conversation after the connection drops.
	ReconnectSecret string `json:"reconnectSecret,omitempty"`
	// GuestFingerprint echoes the fingerprint the supervisor bound to the conversation.
	GuestFingerprint string `json:"guestFingerprint,omitempty"`
}

// WriteFrame writes v as one frame: a 4-byte big-endian length followed by its JSON encoding.
func WriteFrame(w io.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	if len(body) > MaxFrame {
		return fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, len(body))
	}
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// ReadFrame reads exactly one frame written by WriteFrame into v, reading nothing past it, and rejects unknown
// JSON fields.
func ReadFrame(r io.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return fmt.Errorf("read frame header: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return fmt.Errorf("read frame body: %w", err)
	}
	if err := decodeStrict(body, v); err != nil {
		return fmt.Errorf("decode frame: %w", err)
	}
	return nil
}
