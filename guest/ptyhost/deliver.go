package ptyhost

import (
	"context"
	"fmt"
	"time"

	"aicli.dev/aicli/guest/ptyapi"
)

// SendMessage implements ptyapi.PTY: it validates text, records it in the outbox (synced: an accepted message
// outlives the container, see outbox.go), queues it and returns; one delivery goroutine writes queued messages
// whole, in order.
func (h *Host) SendMessage(ctx context.Context, text string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send message: %w", err)
	}
	if len(text) > ptyapi.MaxMessageBytes {
		return ptyapi.Errorf(ptyapi.ErrMessageTooLarge, "%d bytes, limit %d", len(text), ptyapi.MaxMessageBytes)
	}
	if text == "" {
		return ptyapi.Errorf(ptyapi.ErrInvalidArgument, "empty message")
	}
	// One send at a time from the outbox to the queue, so both keep the acceptance order; the outbox's sync
	// happens outside h.mu.
	h.sendMu.Lock()
	defer h.sendMu.Unlock()
	if err := h.accepting(); err != nil {
		return err
	}
	id, err := h.outbox.accept(text)
	if err != nil {
		h.log.Error("recording an accepted message", "err", err)
		return ptyapi.Errorf(ptyapi.ErrInternal, "the message could not be recorded: %v", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.stateErrLocked(); err != nil {
		h.outbox.withdraw(id) // the CLI exited meanwhile: not accepted
		return err
	}
	h.queue = append(h.queue, queued{id: id, text: text})
	// From here until the CLI's turn for text has ended the status is not
	// IDLE; the change is pushed before the caller learns of the acceptance.
	h.refreshLocked()
	return nil
}

// accepting is stateErrLocked under h.mu.
func (h *Host) accepting() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stateErrLocked()
}

// stateErrLocked refuses a message when the CLI is not running. Called with h.mu held.
func (h *Host) stateErrLocked() error {
	switch h.state {
	case stateNew:
		return ptyapi.ErrNotStarted
	case stateExited:
		return ptyapi.ErrExited
	}
	return nil
}

// deliverLoop delivers queued messages one at a time when the CLI can take them.
func (h *Host) deliverLoop() {
	for {
		q, ok := h.nextMessage()
		if !ok {
			return
		}
		h.outbox.typed(q.id)
		err := h.deliver(q.text)
		h.mu.Lock()
		h.inflight = false
		h.lastDeliver = time.Now()
		// A delivered message opens its turn; a failed one has none to wait for.
		h.turnOpen, h.turnStart = err == nil, h.lastDeliver
		h.refreshLocked()
		h.mu.Unlock()
		if err != nil {
			h.log.Warn("message delivery failed", "err", err, "bytes", len(q.text))
		}
	}
}

// nextMessage blocks until a message may be delivered and dequeues it;
// ok=false once the CLI has exited or the host is closed.
func (h *Host) nextMessage() (queued, bool) {
	for {
		h.mu.Lock()
		if h.state == stateExited {
			h.mu.Unlock()
			return queued{}, false
		}
		wait, ready := h.readyLocked(time.Now())
		if ready && len(h.queue) > 0 {
			q := h.queue[0]
			h.queue = h.queue[1:]
			h.inflight = true
			h.mu.Unlock()
			return q, true
		}
		changed := h.changed
		h.mu.Unlock()
		var timer *time.Timer
		var tc <-chan time.Time
		if wait > 0 {
			timer = time.NewTimer(wait)
			tc = timer.C
		}
		stopped := false
		select {
		case <-changed:
		case <-tc:
		case <-h.done:
		case <-h.stopCh:
			stopped = true
		}
		if timer != nil {
			timer.Stop()
		}
		if stopped {
			return queued{}, false
		}
	}
}

// readyLocked reports whether the CLI can take a message now, or how long to
// wait before asking again (0 = until the next change). Called with h.mu held.
func (h *Host) readyLocked(now time.Time) (time.Duration, bool) {
	settle := h.policy.SettleAfterSubmit
	st := h.screen
	// The status must reflect all output received so far.
	if h.evalSeq != h.inSeq.Load() {
		return 0, false
	}
	switch {
	case st == ptyapi.StatusIdle:
	case st == ptyapi.StatusBusy && h.policy.AcceptsQueuedInput:
	default:
		return 0, false
	}
	if !h.lastDeliver.IsZero() {
		if d := h.lastDeliver.Add(settle).Sub(now); d > 0 {
			return d, false
		}
		// The CLI must have reacted to the previous message: it showed a
		// non-idle screen, or produced output and then settled.
		if !h.sawNonIdle && h.evalSeq <= h.deliverSeq {
			return 0, false
		}
	}
	if st == ptyapi.StatusIdle {
		if d := h.lastOutput.Add(settle).Sub(now); d > 0 {
			return d, false
		}
	}
	return 0, true
}

// deliver writes one formatted message, holding the input lock across all of
// its chunks and pauses so that nothing else is typed in between.
func (h *Host) deliver(text string) error {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	chunks := h.adapter.FormatMessage(text)
	for i, c := range chunks {
		if i == len(chunks)-1 {
			// Output from here on is the CLI's reaction to the submission.
			h.mu.Lock()
			h.deliverSeq = h.inSeq.Load()
			h.sawNonIdle, h.sawTurn = false, false
			h.mu.Unlock()
		}
		if err := h.writeInputLocked(c.Data); err != nil {
			return err
		}
		if c.Pause > 0 {
			select {
			case <-time.After(c.Pause):
			case <-h.done:
				return ptyapi.ErrExited
			}
		}
	}
	return nil
}
