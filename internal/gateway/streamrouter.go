package gateway

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"time"

	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/guest/toolwire"
)

// DefaultRouteHeaderTimeout is the default of StreamRouter.HeaderTimeout.
const DefaultRouteHeaderTimeout = 10 * time.Second

// StreamRouter is a GuestStreamHandler that reads the egresswire header every guest-opened stream starts with and
// hands the stream, those bytes replayed in front of it, to the handler of the header's kind: Tools for
// egresswire.KindTool, Egress for everything else (malformed headers included, so the egress server answers them
// exactly as when it is the only handler).
type StreamRouter struct {
	// Egress serves provider and proxy streams. Required.
	Egress GuestStreamHandler
	// Tools serves tool streams; when nil a tool stream gets a toolwire refusal.
	Tools GuestStreamHandler
	// HeaderTimeout bounds reading the header (default DefaultRouteHeaderTimeout).
	HeaderTimeout time.Duration
}

// ServeGuestStream implements GuestStreamHandler.
func (r *StreamRouter) ServeGuestStream(g GuestStream, stream net.Conn) {
	timeout := r.HeaderTimeout
	if timeout <= 0 {
		timeout = DefaultRouteHeaderTimeout
	}
	_ = stream.SetReadDeadline(time.Now().Add(timeout))
	head, kind := peekKind(stream)
	_ = stream.SetReadDeadline(time.Time{})
	replayed := &replayConn{Conn: stream, head: head}
	if kind == egresswire.KindTool {
		if r.Tools == nil {
			defer func() { _ = stream.Close() }()
			_ = stream.SetWriteDeadline(time.Now().Add(time.Second))
			_ = toolwire.WriteJSON(stream, toolwire.TypeExit, toolwire.Exit{Code: toolwire.ExitRefused,
				Refused: toolwire.RefusedUnavailable, Message: "this supervisor serves no tools"})
			return
		}
		r.Tools.ServeGuestStream(g, replayed)
		return
	}
	r.Egress.ServeGuestStream(g, replayed)
}

// peekKind reads one header frame (or as much of it as arrives) and returns the bytes read and the kind; the kind
// is empty when the frame is unreadable. The handler re-reads and judges the header itself.
func peekKind(r io.Reader) ([]byte, egresswire.Kind) {
	var n [2]byte
	if k, err := io.ReadFull(r, n[:]); err != nil {
		return n[:k], ""
	}
	size := int(binary.BigEndian.Uint16(n[:]))
	if size > egresswire.MaxFrame {
		return n[:], ""
	}
	buf := make([]byte, 2+size)
	copy(buf, n[:])
	k, err := io.ReadFull(r, buf[2:])
	if err != nil {
		return buf[:2+k], ""
	}
	var h struct {
		Kind egresswire.Kind `json:"kind"`
	}
	if json.Unmarshal(buf[2:], &h) != nil {
		return buf, ""
	}
	return buf, h.Kind
}

// replayConn is a stream whose first reads return head.
type replayConn struct {
	net.Conn
	head []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
