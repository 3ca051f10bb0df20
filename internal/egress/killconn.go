package egress

import (
	"net"
	"sync/atomic"
	"time"
)

// killConn wraps a guest stream so the server can end it for good. A yamux Close is only a half-close (reads go on
// until the guest's FIN), and the code reading the stream (http.Server, the pipe) re-arms read deadlines, so kill
// pins every deadline in the past and makes further reads and writes fail.
type killConn struct {
	net.Conn
	killed atomic.Bool
}

// past is a deadline that has already expired.
var past = time.Unix(1, 0)

// kill ends every blocked and future read and write, then closes the stream.
func (c *killConn) kill() {
	c.killed.Store(true)
	_ = c.Conn.SetDeadline(past)
	_ = c.Conn.Close()
}

func (c *killConn) Read(p []byte) (int, error) {
	if c.killed.Load() {
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(p)
	if err != nil && c.killed.Load() {
		err = net.ErrClosed
	}
	return n, err
}

func (c *killConn) Write(p []byte) (int, error) {
	if c.killed.Load() {
		return 0, net.ErrClosed
	}
	return c.Conn.Write(p)
}

// SetDeadline implements net.Conn; after kill every deadline stays in the past.
func (c *killConn) SetDeadline(t time.Time) error {
	return c.pin(c.Conn.SetDeadline, t)
}

// SetReadDeadline implements net.Conn; after kill every deadline stays in the past.
func (c *killConn) SetReadDeadline(t time.Time) error {
	return c.pin(c.Conn.SetReadDeadline, t)
}

// SetWriteDeadline implements net.Conn; after kill every deadline stays in the past.
func (c *killConn) SetWriteDeadline(t time.Time) error {
	return c.pin(c.Conn.SetWriteDeadline, t)
}

// pin sets a deadline, re-pinning it in the past when kill ran before or during the call.
func (c *killConn) pin(set func(time.Time) error, t time.Time) error {
	if c.killed.Load() {
		t = past
	}
	err := set(t)
	if c.killed.Load() {
		_ = set(past)
	}
	return err
}
