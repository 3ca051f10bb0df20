package runtime

import (
	"context"
	"log/slog"
	"time"
)

// EventResync is a synthetic event WatchEvents emits after it had to re-subscribe: events may have been missed,
// so a level-based consumer should re-list (Runtime.List) instead of trusting its view.
const EventResync EventType = "resync"

// Backoff bounds for WatchEvents re-subscription.
const (
	watchBackoffMin = 100 * time.Millisecond
	watchBackoffMax = 5 * time.Second
)

// WatchEvents is Runtime.Events that survives the end of a stream (an engine restart, a dropped connection): it
// re-subscribes with exponential backoff (100 ms doubling to 5 s, reset after a stream that delivered events) and
// emits one EventResync after each re-subscription (events in the gap are lost: re-list on resync). The returned
// channel closes only when ctx ends. log may be nil.
func WatchEvents(ctx context.Context, rt Runtime, selector map[string]string, log *slog.Logger) <-chan Event {
	if log == nil {
		log = slog.Default()
	}
	out := make(chan Event)
	go func() {
		defer close(out)
		backoff := watchBackoffMin
		for first := true; ; first = false {
			// Subscribe before announcing the resync, so a consumer's re-list is covered by the new stream.
			evs, errc := rt.Events(ctx, selector)
			if !first {
				select {
				case out <- Event{Type: EventResync, Time: time.Now()}:
				case <-ctx.Done():
					return
				}
			}
			delivered := false
			for ev := range evs {
				delivered = true
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
			if ctx.Err() != nil {
				return
			}
			err := <-errc
			if delivered {
				backoff = watchBackoffMin
			}
			log.Warn("container event stream ended; re-subscribing", "err", err, "after", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			backoff = min(backoff*2, watchBackoffMax)
		}
	}()
	return out
}
