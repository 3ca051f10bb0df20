package controllers

import (
	"context"
	"sync"
)

// ChangeHook carries "this agent's inbox changed" from the mailbox to the
// controllers, which connect it in Start. Fire never blocks the mailbox's
// writer: changes are coalesced per agent and handed on by one goroutine, so
// a flood of mail costs one reconcile per agent per round, not one per
// message. Changes fired before Start are dropped (Start reconciles every
// object anyway).
type ChangeHook struct {
	mu      sync.Mutex
	fn      func(ns, agent string)
	pending map[[2]string]struct{}
	wake    chan struct{}
}

// Fire records a change of the agent's inbox (mailbox.Options.Changed).
func (h *ChangeHook) Fire(ns, agent string) {
	h.mu.Lock()
	if h.fn == nil {
		h.mu.Unlock()
		return
	}
	h.pending[[2]string{ns, agent}] = struct{}{}
	wake := h.wake
	h.mu.Unlock()
	select {
	case wake <- struct{}{}:
	default: // a round is already due
	}
}

// Set connects the hook to fn until ctx ends.
func (h *ChangeHook) Set(ctx context.Context, fn func(ns, agent string)) {
	h.mu.Lock()
	h.fn, h.pending, h.wake = fn, map[[2]string]struct{}{}, make(chan struct{}, 1)
	wake := h.wake
	h.mu.Unlock()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			h.mu.Lock()
			batch := h.pending
			h.pending = map[[2]string]struct{}{}
			h.mu.Unlock()
			for k := range batch {
				fn(k[0], k[1])
			}
		}
	}()
}
