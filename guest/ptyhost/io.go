package ptyhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/charmbracelet/x/vt"

	"aicli.dev/aicli/guest/ptyapi"
)

// emuChunk is PTY output queued for the emulator with its arrival number.
type emuChunk struct {
	data []byte
	seq  uint64
}

// readLoop copies PTY output to the subscribers and the mirror at once and
// queues it for the emulator, which runs behind on its own goroutine; a full
// emulator queue pushes back on the CLI rather than losing screen state.
func (h *Host) readLoop() {
	defer close(h.readEnd)
	defer close(h.emuQ)
	defer h.closeSubscribers(io.EOF)
	buf := make([]byte, 32<<10)
	for {
		n, err := h.ptmx.Read(buf)
		if n > 0 {
			chunk := append([]byte(nil), buf[:n]...)
			seq := h.inSeq.Add(1)
			h.mu.Lock()
			h.lastOutput = time.Now()
			for s := range h.subs {
				if !s.offer(chunk) {
					delete(h.subs, s)
				}
			}
			h.mu.Unlock()
			if h.mirror != nil {
				_, _ = h.mirror.Write(chunk)
			}
			h.emuQ <- emuChunk{data: chunk, seq: seq}
		}
		if err != nil {
			if !errors.Is(err, os.ErrClosed) && !isEIO(err) {
				h.log.Warn("pty read", "err", err)
			}
			return
		}
	}
}

// emuLoop feeds queued output to the emulator and triggers status evaluation.
func (h *Host) emuLoop() {
	defer close(h.emuEnd)
	for c := range h.emuQ {
		h.emuMu.Lock()
		_, _ = h.emu.Write(c.data)
		h.outSeq.Store(c.seq)
		h.emuMu.Unlock()
		select {
		case h.evalSig <- struct{}{}:
		default:
		}
	}
}

// isEIO reports the error a PTY master returns once every slave fd is closed.
func isEIO(err error) bool {
	return errors.Is(err, syscall.EIO)
}

// answerQueries drains the emulator's replies (cursor position, device
// attributes) and writes them to the CLI like a real terminal would. The
// emulator blocks on its reply pipe, so this runs even when replies are discarded.
func (h *Host) answerQueries(emu *vt.Emulator) {
	replies := make(chan []byte, 64)
	go func() {
		defer close(replies)
		buf := make([]byte, 4096)
		for {
			n, err := emu.Read(buf)
			if n > 0 && !h.opts.PassthroughQueries {
				select {
				case replies <- append([]byte(nil), buf[:n]...):
				default: // a CLI that floods queries loses answers, never output
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for r := range replies {
		if err := h.writeInput(r); err != nil {
			h.log.Debug("query reply", "err", err)
		}
	}
}

// evalLoop recomputes the execution status after output arrives.
func (h *Host) evalLoop() {
	for {
		select {
		case <-h.evalSig:
		case <-h.emuEnd:
			// End answerQueries: close the reply pipe's writer (Emulator.Close
			// would race with the pending Read on the emulator's closed flag).
			h.emuMu.Lock()
			if pw, ok := h.emu.InputPipe().(*io.PipeWriter); ok {
				_ = pw.CloseWithError(io.EOF)
			}
			h.emuMu.Unlock()
			return
		}
		scr, seq := h.render()
		st, ok := h.adapter.Classify(scr)
		h.mu.Lock()
		if h.state == stateRunning {
			if !ok {
				// No cue: before the first one the CLI is starting; after, hold
				// delivery (BUSY) rather than guess IDLE.
				st = ptyapi.StatusStarting
				if h.known {
					st = ptyapi.StatusBusy
				}
			} else {
				h.known = true
			}
			h.evalSeq = seq
			if st != ptyapi.StatusIdle && seq > h.deliverSeq {
				h.sawNonIdle = true
			}
			h.setStatusLocked(st)
			h.notifyLocked()
		}
		h.mu.Unlock()
	}
}

// setStatusLocked records a status change. Called with h.mu held.
func (h *Host) setStatusLocked(st ptyapi.ExecutionStatus) {
	if st != h.status {
		h.log.Debug("status", "from", h.status, "to", st)
		h.status = st
		h.since = time.Now()
	}
	h.notifyLocked()
}

// notifyLocked wakes everyone waiting on h.changed. Called with h.mu held.
func (h *Host) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// render snapshots the emulator screen and the output sequence it reflects.
func (h *Host) render() (ptyapi.Screen, uint64) {
	h.emuMu.Lock()
	defer h.emuMu.Unlock()
	w, ht := h.emu.Width(), h.emu.Height()
	lines := strings.Split(h.emu.String(), "\n")
	for len(lines) < ht {
		lines = append(lines, "")
	}
	lines = lines[:ht]
	cur := h.emu.CursorPosition()
	return ptyapi.Screen{Cols: w, Rows: ht, Lines: lines, CursorX: cur.X, CursorY: cur.Y}, h.outSeq.Load()
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

// Status implements ptyapi.PTY.
func (h *Host) Status(ctx context.Context) (ptyapi.StatusInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
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
	return info, nil
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

// Subscribe implements ptyapi.PTY. The reader ends with io.EOF when the CLI's
// output ends or ctx is done, and with ptyapi.ErrSlowSubscriber when it falls
// more than Options.SubscriberBuffer bytes behind.
func (h *Host) Subscribe(ctx context.Context) (io.ReadCloser, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == stateNew {
		return nil, ptyapi.ErrNotStarted
	}
	s := &subscriber{ch: make(chan []byte, 1024), limit: h.opts.SubscriberBuffer, host: h}
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
			case <-s.closed():
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

// subscriber is one Subscribe stream: a bounded queue of output chunks.
type subscriber struct {
	host    *Host
	ch      chan []byte
	limit   int
	mu      sync.Mutex
	queued  int
	err     error
	cur     []byte
	doneCh  chan struct{}
	doneMu  sync.Mutex
	endOnce sync.Once
}

func (s *subscriber) closed() <-chan struct{} {
	s.doneMu.Lock()
	defer s.doneMu.Unlock()
	if s.doneCh == nil {
		s.doneCh = make(chan struct{})
	}
	return s.doneCh
}

// offer queues chunk without blocking; false cuts the subscriber off.
func (s *subscriber) offer(chunk []byte) bool {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return false
	}
	if s.queued+len(chunk) > s.limit {
		s.mu.Unlock()
		s.end(ptyapi.ErrSlowSubscriber)
		return false
	}
	select {
	case s.ch <- chunk:
		s.queued += len(chunk)
		s.mu.Unlock()
		return true
	default:
		s.mu.Unlock()
		s.end(ptyapi.ErrSlowSubscriber)
		return false
	}
}

// end terminates the stream after the queued chunks with err.
func (s *subscriber) end(err error) {
	s.endOnce.Do(func() {
		s.mu.Lock()
		s.err = err
		close(s.ch)
		s.mu.Unlock()
		s.doneMu.Lock()
		if s.doneCh == nil {
			s.doneCh = make(chan struct{})
		}
		close(s.doneCh)
		s.doneMu.Unlock()
	})
}

// Read implements io.Reader.
func (s *subscriber) Read(p []byte) (int, error) {
	if len(s.cur) == 0 {
		b, ok := <-s.ch
		if !ok {
			s.mu.Lock()
			defer s.mu.Unlock()
			return 0, s.err
		}
		s.mu.Lock()
		s.queued -= len(b)
		s.mu.Unlock()
		s.cur = b
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

// Close implements io.Closer; it detaches the subscriber.
func (s *subscriber) Close() error {
	s.host.mu.Lock()
	delete(s.host.subs, s)
	s.host.mu.Unlock()
	s.end(io.EOF)
	return nil
}
