package nbwriter

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
)

// Writer is a non-blocking bounded writer. Safe for concurrent use.
type Writer struct {
	dst      io.Writer
	max      int64
	ch       chan []byte
	queued   atomic.Int64
	dropped  atomic.Int64
	closeMu  sync.RWMutex
	closed   bool
	finished chan struct{}
}

// New starts a Writer copying to dst with at most maxBytes queued.
func New(dst io.Writer, maxBytes int) *Writer {
	if maxBytes <= 0 {
		maxBytes = 4 << 20
	}
	w := &Writer{dst: dst, max: int64(maxBytes), ch: make(chan []byte, 4096), finished: make(chan struct{})}
	go w.run()
	return w
}

func (w *Writer) run() {
	defer close(w.finished)
	for b := range w.ch {
		// A failing destination must not stop the drain: keep consuming.
		_, _ = w.dst.Write(b)
		w.queued.Add(-int64(len(b)))
	}
}

// Write queues a copy of p, or drops it when the queue is full. It never
// blocks and always reports len(p) written.
func (w *Writer) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w.closeMu.RLock()
	defer w.closeMu.RUnlock()
	if w.closed {
		return 0, io.ErrClosedPipe
	}
	if w.queued.Load()+int64(len(p)) > w.max {
		w.dropped.Add(int64(len(p)))
		return len(p), nil
	}
	b := append([]byte(nil), p...)
	select {
	case w.ch <- b:
		w.queued.Add(int64(len(b)))
	default:
		w.dropped.Add(int64(len(p)))
	}
	return len(p), nil
}

// Dropped is the number of bytes dropped so far.
func (w *Writer) Dropped() int64 { return w.dropped.Load() }

// Queued is the number of bytes waiting to be written.
func (w *Writer) Queued() int64 { return w.queued.Load() }

// Close stops accepting writes and waits until the queue is drained or ctx
// ends (a stalled destination then keeps its goroutine until it unblocks).
func (w *Writer) Close(ctx context.Context) error {
	w.closeMu.Lock()
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
	w.closeMu.Unlock()
	select {
	case <-w.finished:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
