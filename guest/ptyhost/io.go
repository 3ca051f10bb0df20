package ptyhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// emulator is the screen model the host feeds with the CLI's output
// (vtscreen.Terminal); answers to terminal queries leave through the reply
// function it was made with.
type emulator interface {
	Write(p []byte) (int, error)
	Resize(cols, rows int)
	Render() ptyapi.Screen
}

// readLoop copies PTY output to the subscribers and the mirror at once and
// appends it to the emulator's backlog, which the emulator works off in
// batches on its own goroutine. Only a backlog past emuBacklogBytes, or a
// subscriber at its bound that still reads, holds the reader (and so the CLI) up.
func (h *Host) readLoop() {
	defer close(h.readEnd)
	defer h.emuQ.close()
	defer h.closeSubscribers(io.EOF)
	buf := make([]byte, 32<<10)
	var subs []*subscriber
	for {
		n, err := h.ptmx.Read(buf)
		if n > 0 {
			seq := h.inSeq.Add(1)
			h.mu.Lock()
			h.lastOutput = time.Now()
			subs = subs[:0]
			for s := range h.subs {
				subs = append(subs, s)
			}
			h.mu.Unlock()
			for _, s := range subs {
				if !s.offer(buf[:n], h.opts.SubscriberGrace, h.stopCh) {
					h.mu.Lock()
					delete(h.subs, s)
					h.mu.Unlock()
				}
			}
			clear(subs)
			if h.mirror != nil {
				_, _ = h.mirror.Write(buf[:n])
			}
			h.emuQ.put(buf[:n], seq)
		}
		if err != nil {
			if !errors.Is(err, os.ErrClosed) && !isEIO(err) {
				h.log.Warn("pty read", "err", err)
			}
			return
		}
	}
}

// emuLoop feeds the backlog to the emulator and triggers status evaluation.
// After a batch of emuBurstBytes or more (a burst is on) it lets the next
// batch build up for emuBurstPause, so a burst costs few wake-ups.
func (h *Host) emuLoop() {
	defer close(h.emuEnd)
	defer close(h.replies)
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		data, seq, ok := h.emuQ.take()
		if !ok {
			return
		}
		for p := data; len(p) > 0; {
			n := min(len(p), emuBatchBytes)
			h.emuMu.Lock()
			_, _ = h.emu.Write(p[:n])
			h.emuMu.Unlock()
			p = p[n:]
		}
		h.outSeq.Store(seq)
		h.emuBytes.Add(uint64(len(data)))
		h.emuQ.release(data)
		select {
		case h.evalSig <- struct{}{}:
		default:
		}
		if len(data) >= emuBurstBytes {
			pause.Reset(emuBurstPause)
			select {
			case <-pause.C:
			case <-h.readEnd:
			}
		}
	}
}

// isEIO reports the error a PTY master returns once every slave fd is closed.
func isEIO(err error) bool {
	return errors.Is(err, syscall.EIO)
}

// queueReply is the emulator's reply function: it hands an answer to a
// terminal query to answerQueries without blocking the emulator.
func (h *Host) queueReply(b []byte) {
	if h.opts.PassthroughQueries {
		return
	}
	select {
	case h.replies <- append([]byte(nil), b...):
	default: // a CLI that floods queries loses answers, never output
	}
}

// answerQueries writes the emulator's answers to the CLI like a real
// terminal would, until the emulator has stopped.
func (h *Host) answerQueries() {
	for r := range h.replies {
		if err := h.writeInput(r); err != nil {
			h.log.Debug("query reply", "err", err)
		}
	}
}

// evalLoop recomputes the execution status after output arrives.
// During a burst (evalBurstBytes or more since the last evaluation) it
// evaluates at most once per evalInterval, as the screen is rendered whole
// each time; smaller output is evaluated at once.
func (h *Host) evalLoop() {
	pause := time.NewTimer(0)
	defer pause.Stop()
	var last time.Time
	var lastBytes uint64
	for {
		select {
		case <-h.evalSig:
		case <-h.emuEnd:
			return
		}
		if d := time.Until(last.Add(evalInterval)); d > 0 && h.emuBytes.Load()-lastBytes >= evalBurstBytes {
			pause.Reset(d)
			select {
			case <-pause.C:
			case <-h.emuEnd:
				return
			}
		}
		last, lastBytes = time.Now(), h.emuBytes.Load()
		scr, seq := h.render()
		st, ok := h.adapter.Classify(scr)
		startScreen := false
		if ss, is := h.adapter.(harness.StartScreener); is && ok && st == ptyapi.StatusIdle {
			startScreen = ss.IsStartScreen(scr)
		}
		h.mu.Lock()
		h.startScreen = startScreen
		if h.state == stateRunning {
			if !ok {
				// No cue: before the first one the CLI is starting; after, hold
				// delivery (BUSY) rather than guess IDLE.
				st = ptyapi.StatusStarting
				if h.known {
					st = ptyapi.StatusBusy
					if !h.guess {
						h.guess, h.guessSince = true, time.Now()
					}
				}
			} else {
				h.known, h.guess = true, false
			}
			st = h.settleStartLocked(st)
			if ok {
				h.cue = st
			}
			h.evalSeq = seq
			if st != ptyapi.StatusIdle && seq > h.deliverSeq {
				h.sawNonIdle = true
				h.sawTurn = h.sawTurn || ok
			}
			h.setScreenLocked(st)
		}
		h.mu.Unlock()
	}
}

// settleStartLocked holds the CLI's first IDLE back as STARTING until it has
// lasted the delivery policy's StartupSettle, and has the screen evaluated
// again when it will have. Called with h.mu held.
func (h *Host) settleStartLocked(st ptyapi.ExecutionStatus) ptyapi.ExecutionStatus {
	if h.settled {
		return st
	}
	settle := h.policy.StartupSettle
	if st != ptyapi.StatusIdle {
		h.startIdle = time.Time{}
		return st
	}
	now := time.Now()
	if h.startIdle.IsZero() {
		h.startIdle = now
	}
	wait := settle - now.Sub(h.startIdle)
	if wait <= 0 {
		h.settled = true
		return st
	}
	if h.settleTimer == nil {
		h.settleTimer = time.AfterFunc(wait, func() {
			select {
			case h.evalSig <- struct{}{}:
			default:
			}
		})
	} else {
		h.settleTimer.Reset(wait)
	}
	return ptyapi.StatusStarting
}

// render snapshots the emulator screen and the output sequence it reflects.
func (h *Host) render() (ptyapi.Screen, uint64) {
	h.emuMu.Lock()
	defer h.emuMu.Unlock()
	return h.emu.Render(), h.outSeq.Load()
}

// writeInput writes raw bytes to the CLI. Serialised with message delivery.
func (h *Host) writeInput(b []byte) error {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	return h.writeInputLocked(b)
}

func (h *Host) writeInputLocked(b []byte) error {
	h.mu.Lock()
	st := h.state
	h.mu.Unlock()
	switch st {
	case stateNew:
		return ptyapi.ErrNotStarted
	case stateExited:
		return ptyapi.ErrExited
	}
	if _, err := h.ptmx.Write(b); err != nil {
		if errors.Is(err, os.ErrClosed) || isEIO(err) {
			return fmt.Errorf("%w: %v", ptyapi.ErrExited, err)
		}
		return fmt.Errorf("write pty: %w", err)
	}
	return nil
}

// Write writes raw input to the CLI (the transparent stdio proxy's stdin path).
func (h *Host) Write(p []byte) (int, error) {
	if err := h.writeInput(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// SendString implements ptyapi.PTY.
func (h *Host) SendString(ctx context.Context, s string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send string: %w", err)
	}
	return h.writeInput([]byte(s))
}

var keyBytes = map[ptyapi.Key]string{
	ptyapi.KeyEnter: "\r", ptyapi.KeyEscape: "\x1b", ptyapi.KeyTab: "\t", ptyapi.KeyBackspace: "\x7f",
	ptyapi.KeyUp: "\x1b[A", ptyapi.KeyDown: "\x1b[B", ptyapi.KeyRight: "\x1b[C", ptyapi.KeyLeft: "\x1b[D",
	ptyapi.KeyCtrlC: "\x03", ptyapi.KeyCtrlD: "\x04", ptyapi.KeyCtrlL: "\x0c",
}

// KeyBytes returns the bytes a terminal sends for k.
func KeyBytes(k ptyapi.Key) (string, bool) {
	b, ok := keyBytes[k]
	return b, ok
}

// SendKeys implements ptyapi.PTY.
func (h *Host) SendKeys(ctx context.Context, keys ...ptyapi.Key) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send keys: %w", err)
	}
	var b strings.Builder
	for _, k := range keys {
		s, ok := keyBytes[k]
		if !ok {
			return ptyapi.Errorf(ptyapi.ErrInvalidArgument, "unknown key %q", k)
		}
		b.WriteString(s)
	}
	return h.writeInput([]byte(b.String()))
}

// RenderScreen implements ptyapi.PTY.
func (h *Host) RenderScreen(ctx context.Context) (ptyapi.Screen, error) {
	if err := h.requireStarted(); err != nil {
		return ptyapi.Screen{}, err
	}
	s, _ := h.render()
	return s, nil
}

// Resize implements ptyapi.PTY.
func (h *Host) Resize(ctx context.Context, cols, rows int) error {
	if err := checkSize(cols, rows); err != nil {
		return err
	}
	if err := h.requireStarted(); err != nil {
		return err
	}
	h.emuMu.Lock()
	h.emu.Resize(cols, rows)
	h.emuMu.Unlock()
	if err := setSize(h.ptmx, cols, rows); err != nil {
		return fmt.Errorf("resize: %w", err)
	}
	return nil
}

func (h *Host) requireStarted() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == stateNew {
		return ptyapi.ErrNotStarted
	}
	return nil
}

// Quota implements ptyapi.PTY.
func (h *Host) Quota(ctx context.Context) (ptyapi.Quota, error) {
	if err := h.requireStarted(); err != nil {
		return ptyapi.Quota{}, err
	}
	s, _ := h.render()
	m := h.adapter.Quota(s)
	if m == nil {
		m = []ptyapi.QuotaMetric{}
	}
	return ptyapi.Quota{Metrics: m}, nil
}
