package ptyhost

import "sync"

// backlog is the emulator's queue of PTY output, bounded in bytes. The PTY
// reader appends and only waits when more than max bytes are pending; the
// emulator takes everything pending at once and hands the buffer back, so two
// buffers are reused and nothing is allocated per chunk.
type backlog struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte // pending bytes
	spare  []byte // the buffer the emulator handed back, reused for the next batch
	seq    uint64 // arrival number of the last chunk in buf
	max    int
	closed bool
}

func newBacklog(max int) *backlog {
	b := &backlog{max: max}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// put appends p (copied) as chunk number seq, waiting while the backlog is
// over its bound. After close it drops p.
func (b *backlog) put(p []byte, seq uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.buf) > 0 && len(b.buf)+len(p) > b.max && !b.closed {
		b.cond.Wait()
	}
	if b.closed {
		return
	}
	b.buf = append(b.buf, p...)
	b.seq = seq
	b.cond.Broadcast()
}

// take waits for pending bytes and returns all of them with the arrival
// number of the last chunk; ok=false once the backlog is closed and empty.
// The caller returns data with release when done with it.
func (b *backlog) take() (data []byte, seq uint64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.buf) == 0 && !b.closed {
		b.cond.Wait()
	}
	if len(b.buf) == 0 {
		return nil, 0, false
	}
	data, seq = b.buf, b.seq
	b.buf, b.spare = b.spare[:0], nil
	b.cond.Broadcast()
	return data, seq, true
}

// release hands a buffer from take back for reuse.
func (b *backlog) release(data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spare == nil && cap(data) <= 2*b.max {
		b.spare = data[:0]
	}
}

// close ends the backlog: take drains what is pending, then reports !ok.
func (b *backlog) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.cond.Broadcast()
}
