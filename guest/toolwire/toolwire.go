package toolwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Type is a frame's type.
type Type byte

// Frame types.
const (
	TypeRequest  Type = 1 // JSON Request; the caller's first frame
	TypeStdin    Type = 2 // bytes for the backend's standard input
	TypeStdinEOF Type = 3 // the caller's standard input ended; empty payload
	TypeStdout   Type = 4 // bytes the backend wrote to its standard output
	TypeStderr   Type = 5 // bytes the backend wrote to its standard error
	TypeExit     Type = 6 // JSON Exit; the server's last frame
)

// String names t for messages.
func (t Type) String() string {
	switch t {
	case TypeRequest:
		return "request"
	case TypeStdin:
		return "stdin"
	case TypeStdinEOF:
		return "stdin-eof"
	case TypeStdout:
		return "stdout"
	case TypeStderr:
		return "stderr"
	case TypeExit:
		return "exit"
	}
	return fmt.Sprintf("type-%d", byte(t))
}

// Limits of one call.
const (
	// MaxArgs bounds the number of arguments.
	MaxArgs = 256
	// MaxArgBytes bounds the arguments' total length.
	MaxArgBytes = 64 << 10
	// MaxStdin bounds the standard input a call may send.
	MaxStdin = 8 << 20
	// MaxOutput bounds the standard output and error of one call together; beyond it the output is truncated
	// and the call fails.
	MaxOutput = 8 << 20
	// MaxDataPayload bounds the payload of a Stdin, Stdout or Stderr frame.
	MaxDataPayload = 64 << 10
	// MaxControlPayload bounds a Request or Exit frame: the arguments JSON-escaped at worst six bytes per byte,
	// plus the token and the envelope.
	MaxControlPayload = 6*MaxArgBytes + 64<<10
)

// HeaderSize is the length of a frame's type and length prefix.
const HeaderSize = 5

// ErrFrameTooLarge is returned for a frame whose payload exceeds its type's limit.
var ErrFrameTooLarge = errors.New("tool frame exceeds the size limit")

// Frame is one frame.
type Frame struct {
	Type    Type
	Payload []byte
}

// maxPayload is the payload limit of t; 0 for an unknown type.
func maxPayload(t Type) int {
	switch t {
	case TypeRequest, TypeExit:
		return MaxControlPayload
	case TypeStdin, TypeStdout, TypeStderr:
		return MaxDataPayload
	case TypeStdinEOF:
		return 0
	}
	return -1
}

// WriteFrame writes one frame in a single Write call.
func WriteFrame(w io.Writer, t Type, payload []byte) error {
	limit := maxPayload(t)
	if limit < 0 {
		return fmt.Errorf("write tool frame: unknown type %d", byte(t))
	}
	if len(payload) > limit {
		return fmt.Errorf("%w: %s frame of %d bytes (limit %d)", ErrFrameTooLarge, t, len(payload), limit)
	}
	buf := make([]byte, HeaderSize+len(payload))
	buf[0] = byte(t)
	binary.BigEndian.PutUint32(buf[1:], uint32(len(payload)))
	copy(buf[HeaderSize:], payload)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write tool frame: %w", err)
	}
	return nil
}

// WriteData writes p as as many frames of type t as MaxDataPayload needs (none for an empty p).
func WriteData(w io.Writer, t Type, p []byte) error {
	for len(p) > 0 {
		n := min(len(p), MaxDataPayload)
		if err := WriteFrame(w, t, p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// ReadFrame reads exactly one frame, reading nothing past it. An unknown type or a payload over its type's limit
// is an error before the payload is read.
func ReadFrame(r io.Reader) (Frame, error) {
	var hdr [HeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Frame{}, fmt.Errorf("read tool frame header: %w", err)
		}
		return Frame{}, err // io.EOF stays bare: a clean end between frames
	}
	t := Type(hdr[0])
	n := binary.BigEndian.Uint32(hdr[1:])
	limit := maxPayload(t)
	if limit < 0 {
		return Frame{}, fmt.Errorf("read tool frame: unknown type %d", hdr[0])
	}
	if uint64(n) > uint64(limit) {
		return Frame{}, fmt.Errorf("%w: %s frame of %d bytes (limit %d)", ErrFrameTooLarge, t, n, limit)
	}
	f := Frame{Type: t, Payload: make([]byte, n)}
	if _, err := io.ReadFull(r, f.Payload); err != nil {
		return Frame{}, fmt.Errorf("read tool frame payload: %w", io.ErrUnexpectedEOF)
	}
	return f, nil
}
