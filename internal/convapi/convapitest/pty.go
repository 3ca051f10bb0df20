package convapitest

import (
	"bytes"
	"context"
	"io"
	"sync"

	"aicli.dev/aicli/guest/ptyapi"
)

// PTY is an in-process ptyapi.PTY that records what it is sent and lets a
// test produce output. The zero value is not usable; call NewPTY.
type PTY struct {
	mu        sync.Mutex
	messages  []string
	keys      bytes.Buffer
	resizes   [][2]int
	sendErr   error
	screen    ptyapi.Screen
	subs      map[*subscription]struct{}
	onMessage func(string)
}

var _ ptyapi.PTY = (*PTY)(nil)

// NewPTY returns a fake PTY showing a one-line idle screen.
func NewPTY() *PTY {
	return &PTY{
		subs:   map[*subscription]struct{}{},
		screen: ptyapi.Screen{Cols: 80, Rows: 2, Lines: []string{"> ", "? for shortcuts"}, CursorX: 2},
	}
}

// Messages returns the messages SendMessage accepted, in order.
func (p *PTY) Messages() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.messages...)
}

// Keystrokes returns everything SendString received, concatenated.
func (p *PTY) Keystrokes() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys.String()
}

// Resizes returns the sizes Resize was called with, as {cols, rows}.
func (p *PTY) Resizes() [][2]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][2]int(nil), p.resizes...)
}

// FailSends makes every later SendMessage fail with err (nil restores success).
func (p *PTY) FailSends(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sendErr = err
}

// OnMessage runs fn (outside the lock) after each accepted message.
func (p *PTY) OnMessage(fn func(string)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onMessage = fn
}

// SetScreen sets what RenderScreen returns.
func (p *PTY) SetScreen(s ptyapi.Screen) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.screen = s
}

// Subscribers is the number of open Subscribe readers.
func (p *PTY) Subscribers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.subs)
}

// Output delivers b to every open subscriber, as CLI output would.
func (p *PTY) Output(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := range p.subs {
		s.write(b)
	}
}

// EndOutput ends every open subscription with EOF, as a CLI exit would.
func (p *PTY) EndOutput() {
	p.mu.Lock()
	subs := p.subs
	p.subs = map[*subscription]struct{}{}
	p.mu.Unlock()
	for s := range subs {
		s.end()
	}
}

// Start implements ptyapi.PTY; the fake is always started.
func (p *PTY) Start(context.Context, ptyapi.StartRequest) (ptyapi.StartResponse, error) {
	return ptyapi.StartResponse{}, ptyapi.ErrAlreadyStarted
}

// SendString records keystrokes.
func (p *PTY) SendString(_ context.Context, s string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys.WriteString(s)
	return nil
}

// SendKeys records named keys as "<Key>".
func (p *PTY) SendKeys(_ context.Context, keys ...ptyapi.Key) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		p.keys.WriteString("<" + string(k) + ">")
	}
	return nil
}

// SendMessage records text, or fails as configured by FailSends. Like the
// real guest it refuses text over ptyapi.MaxMessageBytes.
func (p *PTY) SendMessage(_ context.Context, text string) error {
	p.mu.Lock()
	if len(text) > ptyapi.MaxMessageBytes {
		p.mu.Unlock()
		return ptyapi.ErrMessageTooLarge
	}
	if p.sendErr != nil {
		err := p.sendErr
		p.mu.Unlock()
		return err
	}
	p.messages = append(p.messages, text)
	fn := p.onMessage
	p.mu.Unlock()
	if fn != nil {
		fn(text)
	}
	return nil
}

// RenderScreen returns the screen set with SetScreen.
func (p *PTY) RenderScreen(context.Context) (ptyapi.Screen, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.screen
	s.Lines = append([]string(nil), s.Lines...)
	return s, nil
}

// Resize records the size; non-positive sizes are ErrInvalidArgument.
func (p *PTY) Resize(_ context.Context, cols, rows int) error {
	if cols <= 0 || rows <= 0 {
		return ptyapi.Errorf(ptyapi.ErrInvalidArgument, "size %dx%d", cols, rows)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resizes = append(p.resizes, [2]int{cols, rows})
	return nil
}

// Status reports an idle, live CLI.
func (p *PTY) Status(context.Context) (ptyapi.StatusInfo, error) {
	return ptyapi.StatusInfo{Status: ptyapi.StatusIdle, Alive: true, Harness: "fake"}, nil
}

// Quota reports nothing.
func (p *PTY) Quota(context.Context) (ptyapi.Quota, error) { return ptyapi.Quota{}, nil }

// Subscribe returns a reader of all output produced from now on; it ends
// with EOF on EndOutput, when ctx ends, or when closed.
func (p *PTY) Subscribe(ctx context.Context) (io.ReadCloser, error) {
	s := &subscription{owner: p, doneCh: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	p.mu.Lock()
	p.subs[s] = struct{}{}
	p.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.doneCh:
		}
	}()
	return s, nil
}

// Stop ends output like a CLI exit.
func (p *PTY) Stop(context.Context) error {
	p.EndOutput()
	return nil
}

// subscription is one Subscribe reader with an unbounded buffer.
type subscription struct {
	owner  *PTY
	mu     sync.Mutex
	cond   *sync.Cond
	buf    bytes.Buffer
	ended  bool
	doneCh chan struct{}
}

func (s *subscription) write(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.buf.Write(b)
		s.cond.Broadcast()
	}
}

func (s *subscription) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	close(s.doneCh)
	s.cond.Broadcast()
}

// Read implements io.Reader: buffered output first, then EOF once ended.
func (s *subscription) Read(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.buf.Len() == 0 && !s.ended {
		s.cond.Wait()
	}
	if s.buf.Len() > 0 {
		return s.buf.Read(b)
	}
	return 0, io.EOF
}

// Close ends the subscription and unregisters it.
func (s *subscription) Close() error {
	s.owner.mu.Lock()
	delete(s.owner.subs, s)
	s.owner.mu.Unlock()
	s.end()
	return nil
}
