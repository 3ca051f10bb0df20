package client

import (
	"context"
	"time"
)

// Backoff spaces out reconnects of a stream the server keeps ending: 50 ms,
// doubling up to 2 s. The zero value is ready to use.
type Backoff struct{ next time.Duration }

const (
	backoffFirst = 50 * time.Millisecond
	backoffMax   = 2 * time.Second
)

// Wait blocks for the current delay and doubles the next one; it returns
// false when ctx ends first.
func (b *Backoff) Wait(ctx context.Context) bool {
	if b.next == 0 {
		b.next = backoffFirst
	}
	t := time.NewTimer(b.next)
	defer t.Stop()
	b.next = min(2*b.next, backoffMax)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Reset starts the delays over, after a stream made progress.
func (b *Backoff) Reset() { b.next = 0 }
