package aictl

import (
	"context"
	"strconv"
	"time"
)

// newerRV reports whether resourceVersion a is newer than b; versions are
// the store's event sequence numbers. An empty b is older than anything.
func newerRV(a, b string) bool {
	if b == "" {
		return a != ""
	}
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a > b
	}
	return x > y
}

// backoff spaces out reconnects of a watch the server keeps ending.
type backoff struct{ next time.Duration }

func newBackoff() *backoff { return &backoff{next: 50 * time.Millisecond} }

// wait blocks for the current delay, doubling it up to 2s; false when ctx ended.
func (b *backoff) wait(ctx context.Context) bool {
	t := time.NewTimer(b.next)
	defer t.Stop()
	if b.next *= 2; b.next > 2*time.Second {
		b.next = 2 * time.Second
	}
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
