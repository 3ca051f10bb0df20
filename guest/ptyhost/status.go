package ptyhost

import (
	"context"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// A delivered message's turn ends when the screen is IDLE after a busy or
// waiting cue was recognised on it following the submission (a screen without
// cues, e.g. half redrawn, reads BUSY but proves nothing), unless that IDLE
// screen is the CLI's start screen (harness.StartScreener). For a CLI that is
// never seen so (a command it answers at once, or a turn too quick for the
// screen to show it), or that stays on its start screen, the turn ends once
// its IDLE screen has been so for the harness's ReactWithin since the
// delivery and without output for turnQuietEnd, or at the latest three
// ReactWithin after the delivery (a CLI that keeps drawing while idle).
const turnQuietEnd = 500 * time.Millisecond

// guessHold is how long a screen without cues keeps the status of the last
// recognised one before it reads BUSY. A full-screen TUI's redraw reaches
// the guest in several PTY reads (about 4 KiB each), and the screen between
// two of them often has no cue: those frames would read BUSY for a few
// milliseconds at every redraw, an IDLE–BUSY–IDLE flicker pushed to every
// watcher. Delivery is still held at once.
const guessHold = 150 * time.Millisecond

// setScreenLocked records the status classified from the screen and
// refreshes the reported one. Called with h.mu held.
func (h *Host) setScreenLocked(st ptyapi.ExecutionStatus) {
	h.screen = st
	h.refreshLocked()
}

// refreshLocked recomputes the reported status: the screen's, except that
// IDLE reads BUSY while a message is queued, being typed, or its turn has not
// ended. It wakes everyone waiting on h.changed. Called with h.mu held.
func (h *Host) refreshLocked() {
	now := time.Now()
	if h.turnOpen && h.turnEndedLocked(now) {
		h.turnOpen = false
	}
	st := h.screen
	if h.guess && h.cue != "" && h.state == stateRunning {
		if wait := h.guessSince.Add(guessHold).Sub(now); wait > 0 {
			st = h.cue
			h.refreshAfterLocked(now, wait)
		}
	}
	if st == ptyapi.StatusIdle && h.state == stateRunning && (len(h.queue) > 0 || h.inflight || h.turnOpen) {
		st = ptyapi.StatusBusy
	}
	if st != h.status {
		h.log.Debug("status", "from", h.status, "to", st, "screen", h.screen)
		h.status = st
		h.since = now
	}
	h.notifyLocked()
}

// turnEndedLocked reports whether the open turn has ended; when only time
// can end it, it schedules the check. Called with h.mu held.
func (h *Host) turnEndedLocked(now time.Time) bool {
	if h.state != stateRunning {
		return true
	}
	if h.screen != ptyapi.StatusIdle {
		return false
	}
	if h.sawTurn && !h.startScreen {
		return true
	}
	// Never seen reacting (or back on the start screen): wait for the screen
	// to reflect all output so far (the evaluation that follows it checks
	// again), then for ReactWithin and quiet.
	if h.evalSeq != h.inSeq.Load() {
		return false
	}
	react := h.policy.ReactWithin
	if react <= 0 {
		react = harness.DefaultReactWithin
	}
	deadline := later(h.turnStart.Add(react), h.lastOutput.Add(turnQuietEnd))
	if hard := h.turnStart.Add(3 * react); hard.Before(deadline) {
		deadline = hard
	}
	if wait := deadline.Sub(now); wait > 0 {
		h.refreshAfterLocked(now, wait)
		return false
	}
	return true
}

// refreshAfterLocked has the status refreshed after wait, unless a refresh
// is due sooner. Called with h.mu held.
func (h *Host) refreshAfterLocked(now time.Time, wait time.Duration) {
	at := now.Add(wait)
	if !h.refreshAt.IsZero() && !h.refreshAt.After(at) {
		return
	}
	h.refreshAt = at
	if h.refreshTimer == nil {
		h.refreshTimer = time.AfterFunc(wait, h.timedRefresh)
	} else {
		h.refreshTimer.Reset(wait)
	}
}

// timedRefresh is refreshTimer's function.
func (h *Host) timedRefresh() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refreshAt = time.Time{}
	if h.state == stateRunning {
		h.refreshLocked()
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// notifyLocked wakes everyone waiting on h.changed. Called with h.mu held.
func (h *Host) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// infoLocked is the reported status. Called with h.mu held.
func (h *Host) infoLocked() ptyapi.StatusInfo {
	info := ptyapi.StatusInfo{
		Status: h.status, Alive: h.state == stateRunning, Harness: h.harnessName, SessionID: h.sessionID,
		PendingMessages: len(h.queue), Since: h.since,
	}
	if h.inflight {
		info.PendingMessages++
	}
	if h.exitCode != nil {
		c := *h.exitCode
		info.ExitCode = &c
	}
	return info
}

// Status implements ptyapi.PTY.
func (h *Host) Status(ctx context.Context) (ptyapi.StatusInfo, error) {
	h.mu.Lock()
	undiscovered := h.state == stateRunning && h.sessionID == "" && h.adapter != nil
	a, home, workDir, launched := h.adapter, h.opts.Home, h.workDir, h.launchedAt
	h.mu.Unlock()
	if undiscovered {
		// The supervisor reads the status before a pause: make sure it learns
		// a session id the CLI has written since the last background poll.
		h.tryDiscover(a, harness.LaunchRequest{Home: home, WorkDir: workDir}, launched)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	info := h.infoLocked()
	if info.Status == ptyapi.StatusIdle && h.evalSeq != h.inSeq.Load() {
		// Output has arrived that the screen (or its evaluation) does not
		// reflect yet: an idle screen may be stale.
		info.Status = ptyapi.StatusBusy
	}
	return info, nil
}

var _ ptyapi.StatusWatcher = (*Host)(nil)

// WatchStatus implements ptyapi.StatusWatcher: the reported status now, then
// after every change, until ctx ends (its error) or the host is closed (nil).
func (h *Host) WatchStatus(ctx context.Context, fn func(ptyapi.StatusInfo) error) error {
	var last ptyapi.StatusInfo
	sent := false
	for {
		h.mu.Lock()
		info, changed := h.infoLocked(), h.changed
		h.mu.Unlock()
		if !sent || !sameStatus(last, info) {
			if err := fn(info); err != nil {
				return err
			}
			last, sent = info, true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-h.stopCh:
			return nil
		}
	}
}

// sameStatus reports whether a and b are equal in every field but Since.
func sameStatus(a, b ptyapi.StatusInfo) bool {
	if (a.ExitCode == nil) != (b.ExitCode == nil) || a.ExitCode != nil && *a.ExitCode != *b.ExitCode {
		return false
	}
	return a.Status == b.Status && a.Alive == b.Alive && a.Harness == b.Harness && a.SessionID == b.SessionID &&
		a.PendingMessages == b.PendingMessages
}
