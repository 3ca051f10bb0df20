package convapitest

import (
	"context"
	"sync"
	"time"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// Sessions is an in-memory convapi.LivePTYs.
type Sessions struct {
	mu sync.Mutex
	m  map[string]ptyapi.PTY
}

// Set makes pty the live PTY of conversation uid.
func (s *Sessions) Set(uid string, pty ptyapi.PTY) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]ptyapi.PTY{}
	}
	s.m[uid] = pty
}

// Remove forgets the live PTY of uid.
func (s *Sessions) Remove(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, uid)
}

// PTY implements convapi.LivePTYs.
func (s *Sessions) PTY(uid string) (ptyapi.PTY, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.m[uid]
	return p, ok
}

// Expectation is one Attribution.Expect call.
type Expectation struct {
	UID, Speaker, Text string
}

// Attribution records Expect calls.
type Attribution struct {
	mu  sync.Mutex
	got []Expectation
}

// Expect implements convapi.Attribution.
func (a *Attribution) Expect(uid, speaker, text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, Expectation{UID: uid, Speaker: speaker, Text: text})
}

// Calls returns the recorded expectations in order.
func (a *Attribution) Calls() []Expectation {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Expectation(nil), a.got...)
}

// Transcripts is an in-memory convapi.Transcripts with cursors from 1.
type Transcripts struct {
	mu      sync.Mutex
	entries map[string][]transcriptwire.Entry
	changed chan struct{} // closed and replaced on every append
	// cut, when positive, ends every subscription after that many entries.
	cut       int
	subscribe int
}

// NewTranscripts returns an empty transcript store.
func NewTranscripts() *Transcripts {
	return &Transcripts{entries: map[string][]transcriptwire.Entry{}, changed: make(chan struct{})}
}

// Append commits one entry to uid's transcript and returns it.
func (t *Transcripts) Append(uid, speaker, text string) transcriptwire.Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := transcriptwire.Entry{Cursor: int64(len(t.entries[uid]) + 1), Speaker: speaker, Text: text, Time: time.Now().UTC()}
	t.entries[uid] = append(t.entries[uid], e)
	close(t.changed)
	t.changed = make(chan struct{})
	return e
}

// CutSubscriptionsAfter makes every later subscription end after n entries,
// as a server dropping a slow or restarted stream would.
func (t *Transcripts) CutSubscriptionsAfter(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cut = n
}

// Subscriptions counts Subscribe calls so far.
func (t *Transcripts) Subscriptions() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.subscribe
}

// Read implements convapi.Transcripts.
func (t *Transcripts) Read(_ context.Context, uid string, from int64, limit int) ([]transcriptwire.Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.after(uid, from, limit), nil
}

// Last implements convapi.Transcripts.
func (t *Transcripts) Last(_ context.Context, uid string) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return int64(len(t.entries[uid])), nil
}

func (t *Transcripts) after(uid string, from int64, limit int) []transcriptwire.Entry {
	all := t.entries[uid]
	start := int(max(from, 1) - 1)
	if start >= len(all) {
		return nil
	}
	end := len(all)
	if limit > 0 && start+limit < end {
		end = start + limit
	}
	return append([]transcriptwire.Entry(nil), all[start:end]...)
}

// Subscribe implements convapi.Transcripts: backlog from from, then live.
func (t *Transcripts) Subscribe(ctx context.Context, uid string, from int64) (<-chan transcriptwire.Entry, error) {
	t.mu.Lock()
	t.subscribe++
	cut := t.cut
	t.mu.Unlock()
	ch := make(chan transcriptwire.Entry)
	go func() {
		defer close(ch)
		next, sent := max(from, 1), 0
		for {
			t.mu.Lock()
			batch, changed := t.after(uid, next, 0), t.changed
			t.mu.Unlock()
			for _, e := range batch {
				select {
				case ch <- e:
				case <-ctx.Done():
					return
				}
				next, sent = e.Cursor+1, sent+1
				if cut > 0 && sent >= cut {
					return
				}
			}
			if len(batch) == 0 {
				select {
				case <-changed:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return ch, nil
}
