package ptyhost

import (
	"context"
	"io"
	"sync"
	"time"

	"aicli.dev/aicli/guest/ptyapi"
)

// Subscribe implements ptyapi.PTY. The reader ends with io.EOF when the CLI's
// output ends or ctx is done. A reader Options.SubscriberBuffer bytes behind
// holds the CLI's output up while it keeps reading, and ends with
// ptyapi.ErrSlowSubscriber once it has read nothing for Options.SubscriberGrace.
func (h *Host) Subscribe(ctx context.Context) (io.ReadCloser, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == stateNew {
		return nil, ptyapi.ErrNotStarted
	}
	s := &subscriber{
		host: h, ring: ring{buf: make([]byte, h.opts.SubscriberBuffer)},
		avail: make(chan struct{}, 1), drained: make(chan struct{}, 1), done: make(chan struct{}),
	}
	if h.outputEnded {
		s.end(io.EOF)
		return s, nil
	}
	h.subs[s] = struct{}{}
	if ctx.Done() != nil {
		go func() {
			select {
			case <-ctx.Done():
				_ = s.Close()
			case <-s.done:
			}
		}()
	}
	return s, nil
}

func (h *Host) closeSubscribers(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.outputEnded = true
	for s := range h.subs {
		s.end(err)
		delete(h.subs, s)
	}
}

// ring is a fixed-size byte FIFO.
type ring struct {
	buf        []byte
	head, size int
}

func (r *ring) free() int { return len(r.buf) - r.size }

// write appends as much of p as fits and returns how much that was.
func (r *ring) write(p []byte) int {
	n := min(len(p), r.free())
	tail := (r.head + r.size) % len(r.buf)
	c := copy(r.buf[tail:], p[:n])
	copy(r.buf, p[c:n])
	r.size += n
	return n
}

// read takes up to len(p) bytes off the front.
func (r *ring) read(p []byte) int {
	n := min(len(p), r.size)
	c := copy(p[:n], r.buf[r.head:])
	copy(p[c:n], r.buf)
	r.head = (r.head + n) % len(r.buf)
	r.size -= n
	return n
}

// subscriber is one Subscribe stream: a byte ring the PTY reader copies into.
type subscriber struct {
	host    *Host
	mu      sync.Mutex
	ring    ring
	ended   bool
	err     error
	avail   chan struct{} // signalled when bytes or the end arrive
	lastIn  time.Time     // when the last chunk was queued
	drained chan struct{} // signalled when Read frees space
	done    chan struct{} // closed at the end
	endOnce sync.Once
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// offer copies chunk into the ring. When the ring is full it waits while the
// reader keeps freeing space, and cuts the subscriber off once it has freed
// none for grace (or ends it when stop closes); false means the subscriber is gone.
func (s *subscriber) offer(chunk []byte, grace time.Duration, stop <-chan struct{}) bool {
	var timer *time.Timer
	for {
		s.mu.Lock()
		if s.ended {
			s.mu.Unlock()
			return false
		}
		n := s.ring.write(chunk)
		if n > 0 {
			s.lastIn = time.Now()
		}
		s.mu.Unlock()
		if n > 0 {
			signal(s.avail)
			chunk = chunk[n:]
		}
		if len(chunk) == 0 {
			return true
		}
		if timer == nil {
			timer = time.NewTimer(grace)
			defer timer.Stop()
		}
		select {
		case <-s.drained:
			timer.Reset(grace)
		case <-timer.C:
			s.end(ptyapi.ErrSlowSubscriber)
			return false
		case <-stop:
			s.end(io.EOF)
			return false
		case <-s.done:
			return false
		}
	}
}

// end terminates the stream after the queued bytes with err.
func (s *subscriber) end(err error) {
	s.endOnce.Do(func() {
		s.mu.Lock()
		s.ended, s.err = true, err
		s.mu.Unlock()
		close(s.done)
		signal(s.avail)
	})
}

// Read implements io.Reader: it blocks until output is queued and returns as
// much of it as fits in p, so bursts reach the transport in few large writes.
func (s *subscriber) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		s.mu.Lock()
		if s.ring.size > 0 {
			n := s.ring.read(p)
			s.mu.Unlock()
			signal(s.drained)
			return n, nil
		}
		if s.ended {
			err := s.err
			s.mu.Unlock()
			return 0, err
		}
		s.mu.Unlock()
		select {
		case <-s.avail:
		case <-s.done:
		}
	}
}

// ReadBurst copies queued output into p while a burst goes on: it returns
// once p is full, once no output has been queued for quiet, after max, or
// at the end of the stream, and reports how much it copied. It sleeps
// 2×quiet between looks (a timer costs less than a wake-up per chunk), so a
// fast burst costs one wake-up per p and the tail of a burst is held back
// for about 2×quiet at most.
func (s *subscriber) ReadBurst(p []byte, quiet, max time.Duration) int {
	n := 0
	deadline := time.Now().Add(max)
	var timer *time.Timer
	for {
		s.mu.Lock()
		n += s.ring.read(p[n:])
		ended, last := s.ended, s.lastIn
		s.mu.Unlock()
		now := time.Now()
		if n == len(p) || ended || now.Sub(last) >= quiet || !now.Before(deadline) {
			break
		}
		wait := min(2*quiet, deadline.Sub(now))
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		select {
		case <-timer.C:
		case <-s.done:
		}
	}
	if n > 0 {
		signal(s.drained)
	}
	return n
}

// Close implements io.Closer; it detaches the subscriber.
func (s *subscriber) Close() error {
	s.host.mu.Lock()
	delete(s.host.subs, s)
	s.host.mu.Unlock()
	s.end(io.EOF)
	return nil
}
