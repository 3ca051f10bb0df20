package ptyhost

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// loneSubscriber is a subscriber fed directly through offer, without a host.
func loneSubscriber(size int) *subscriber {
	return &subscriber{ring: ring{buf: make([]byte, size)}, avail: make(chan struct{}, 1),
		drained: make(chan struct{}, 1), done: make(chan struct{})}
}

// feed offers n chunks of size bytes, one every gap, and closes done after the last.
func feed(s *subscriber, n, size int, gap time.Duration) (done chan struct{}) {
	done = make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			if !s.offer(bytes.Repeat([]byte{'x'}, size), time.Minute, nil) {
				return
			}
			time.Sleep(gap)
		}
	}()
	return done
}

func timedBurst(s *subscriber, p []byte, quiet, max time.Duration) (int, time.Duration) {
	t0 := time.Now()
	n := s.ReadBurst(p, quiet, max)
	return n, time.Since(t0)
}

func TestReadBurstReturnsAtOnceWhenQueuedOutputFills(t *testing.T) {
	s := loneSubscriber(64 << 10)
	s.offer(make([]byte, 10<<10), time.Minute, nil)
	if n, d := timedBurst(s, make([]byte, 4<<10), time.Minute, time.Minute); n != 4<<10 || d > time.Second {
		t.Fatalf("got %d bytes after %v, want 4096 at once", n, d)
	}
}

// While output keeps arriving the read gathers it until the buffer is full, well past quiet in total.
func TestReadBurstGathersWhileOutputArrives(t *testing.T) {
	s := loneSubscriber(1 << 20)
	s.offer(make([]byte, 1<<10), time.Minute, nil)
	done := feed(s, 200, 1<<10, time.Millisecond)
	defer func() { <-done }()
	// 1 KiB per millisecond, never quiet for 50 ms: the read gathers until 64 KiB are in.
	const quiet = 50 * time.Millisecond
	if n, d := timedBurst(s, make([]byte, 64<<10), quiet, 20*time.Second); n != 64<<10 || d > 10*time.Second {
		t.Fatalf("got %d bytes after %v, want the full 64 KiB gathered from 1 KiB chunks as they came", n, d)
	}
}

// The tail of a burst goes out once the CLI has been quiet for quiet, not after max.
func TestReadBurstEndsWhenOutputStops(t *testing.T) {
	s := loneSubscriber(1 << 20)
	<-feed(s, 3, 1<<10, time.Millisecond)
	const quiet = 20 * time.Millisecond
	n, d := timedBurst(s, make([]byte, 64<<10), quiet, 20*time.Second)
	if n != 3<<10 || d > 10*time.Second {
		t.Fatalf("got %d bytes after %v, want 3 KiB once quiet", n, d)
	}
	// Output that has already been quiet for longer than quiet is returned without waiting.
	s.offer(make([]byte, 100), time.Minute, nil)
	time.Sleep(2 * quiet)
	if n, d := timedBurst(s, make([]byte, 64<<10), quiet, 20*time.Second); n != 100 || d > quiet {
		t.Fatalf("got %d bytes after %v, want the 100 queued at once", n, d)
	}
}

// Output that trickles forever is cut into frames of at most max's worth.
func TestReadBurstIsBoundedByMax(t *testing.T) {
	s := loneSubscriber(1 << 20)
	s.offer([]byte("."), time.Minute, nil)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			s.offer([]byte("."), time.Minute, nil)
			time.Sleep(time.Millisecond)
		}
	}()
	const max = 50 * time.Millisecond
	n, d := timedBurst(s, make([]byte, 1<<20), time.Minute, max)
	if n == 0 || d < max || d > 10*time.Second {
		t.Fatalf("got %d bytes after %v, want some after about %v", n, d, max)
	}
}

func TestReadBurstReturnsAtTheEnd(t *testing.T) {
	s := loneSubscriber(64 << 10)
	s.offer([]byte("last"), time.Minute, nil)
	go func() {
		time.Sleep(10 * time.Millisecond)
		s.end(io.EOF)
	}()
	p := make([]byte, 1<<10)
	n, d := timedBurst(s, p, 20*time.Second, 20*time.Second)
	if string(p[:n]) != "last" || d > 10*time.Second {
		t.Fatalf("got %q after %v, want \"last\" at the end of the stream", p[:n], d)
	}
}
