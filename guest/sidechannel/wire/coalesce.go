package wire

import (
	"crypto/tls"
	"encoding/binary"
	"net"
	"sync"
)

// Write coalescing on the side channel. yamux writes every frame as two
// writes (its 12-byte header, then the body), and TLS writes each record of
// up to 16 KiB with its own socket write, so a 64 KiB data frame used to cost
// six socket writes and as many wake-ups of the reading end. Coalescing
// sends a whole data frame — header record and body records — in one socket
// write: RecordBatcher sits under TLS and gathers the records of an open
// batch, and MuxConn sits over TLS, under yamux, opening a batch for each
// frame and closing it after the frame's last write.

// yamux's frame header: version, type, flags, stream id, length (uint32 BE
// at 8); type 0 is a data frame, whose body (length bytes) yamux writes next.
const (
	muxHeaderSize = 12
	muxTypeData   = 0
)

// RecordBatcher is a net.Conn under a TLS connection that can gather the
// records TLS writes during a batch into one write. Outside a batch (the
// handshake, alerts) writes go straight through.
type RecordBatcher struct {
	net.Conn
	mu       sync.Mutex
	batching bool
	buf      []byte
}

// NewRecordBatcher wraps c.
func NewRecordBatcher(c net.Conn) *RecordBatcher { return &RecordBatcher{Conn: c} }

// maxKeptBatch bounds the buffer a RecordBatcher keeps between batches: a
// 64 KiB stream chunk with its frame and record overhead fits.
const maxKeptBatch = 128 << 10

// Write implements net.Conn: during a batch it appends p and reports it
// written; the error of a gathered write comes from flush.
func (b *RecordBatcher) Write(p []byte) (int, error) {
	b.mu.Lock()
	if b.batching {
		b.buf = append(b.buf, p...)
		b.mu.Unlock()
		return len(p), nil
	}
	b.mu.Unlock()
	return b.Conn.Write(p)
}

func (b *RecordBatcher) begin() {
	b.mu.Lock()
	b.batching = true
	b.mu.Unlock()
}

// flush ends the batch and writes what it gathered in one write.
func (b *RecordBatcher) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.batching = false
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.Conn.Write(b.buf)
	if cap(b.buf) > maxKeptBatch {
		b.buf = nil
	} else {
		b.buf = b.buf[:0]
	}
	return err
}

// Close sends anything gathered (a TLS alert written while a frame was
// open) before closing.
func (b *RecordBatcher) Close() error {
	_ = b.flush()
	return b.Conn.Close()
}

// MuxConn is the connection yamux runs on: a TLS connection over a
// RecordBatcher. Each yamux frame reaches the socket in one write.
type MuxConn struct {
	*tls.Conn
	under *RecordBatcher
	// open: a data frame's header went out and its body follows.
	open bool
}

// NewMuxConn returns the yamux transport for tc, a TLS connection made over
// under.
func NewMuxConn(tc *tls.Conn, under *RecordBatcher) *MuxConn {
	return &MuxConn{Conn: tc, under: under}
}

// Write implements net.Conn. yamux's send loop is its only writer, so
// writes never overlap.
func (m *MuxConn) Write(p []byte) (int, error) {
	if !m.open {
		m.under.begin()
	}
	n, err := m.Conn.Write(p)
	if err == nil && !m.open && len(p) == muxHeaderSize && p[1] == muxTypeData &&
		binary.BigEndian.Uint32(p[8:]) > 0 {
		m.open = true // keep gathering: the body is the next write
		return n, nil
	}
	m.open = false
	if ferr := m.under.flush(); err == nil {
		err = ferr
	}
	return n, err
}
