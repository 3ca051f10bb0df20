package mailbox

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"aicli.dev/aicli/internal/store"
)

// Store is the store's side table (synced writes, durable reads).
type Store interface {
	PutKV(ctx context.Context, bucket, key string, val []byte) error
	ScanKV(ctx context.Context, bucket, prefix, from string, limit int) ([]store.KV, error)
}

// Mailbox owns the mail log and its inbox projection. It is the only writer of
// the log; it serialises the commands of a namespace.
type Mailbox struct {
	store   Store
	now     func() time.Time
	changed func(ns, agent string)

	mu  sync.Mutex
	nss map[string]*namespace
}

// namespace is one namespace's lock and projection; a nil projection is
// rebuilt from the log on next use (after a failed write, or by Rebuild).
type namespace struct {
	mu   sync.Mutex
	proj *projection
}

// Options configure Open.
type Options struct {
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Changed, when set, is told after every appended event whose inbox it
	// touched (a message's recipient, a read cursor's agent), outside the
	// mailbox's locks.
	Changed func(ns, agent string)
}

// Open replays the log of every namespace into the projection.
func Open(ctx context.Context, st Store, opts Options) (*Mailbox, error) {
	m := &Mailbox{store: st, now: opts.Now, changed: opts.Changed, nss: map[string]*namespace{}}
	if m.now == nil {
		m.now = time.Now
	}
	projs := map[string]*projection{}
	err := m.replay(ctx, "", func(ns string, seq uint64, r *record) {
		p := projs[ns]
		if p == nil {
			p = newProjection()
			projs[ns] = p
		}
		p.apply(seq, r)
	})
	if err != nil {
		return nil, err
	}
	for ns, p := range projs {
		m.nss[ns] = &namespace{proj: p}
	}
	return m, nil
}

// lock returns the namespace locked, with its projection loaded.
func (m *Mailbox) lock(ctx context.Context, ns string) (*namespace, error) {
	m.mu.Lock()
	n := m.nss[ns]
	if n == nil {
		n = &namespace{proj: newProjection()}
		m.nss[ns] = n
	}
	m.mu.Unlock()
	n.mu.Lock()
	if n.proj == nil {
		p, err := m.load(ctx, ns)
		if err != nil {
			n.mu.Unlock()
			return nil, err
		}
		n.proj = p
	}
	return n, nil
}

// write appends r to the namespace's log as its next event, synced, and
// applies it. Callers hold n.mu.
func (m *Mailbox) write(ctx context.Context, ns string, n *namespace, r *record) (uint64, error) {
	p := n.proj
	r.Time = m.now().UTC().Round(0)
	if r.Time.Before(p.lastTime) {
		r.Time = p.lastTime // timestamps never go backwards within a namespace
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	seq := p.last + 1
	if err := m.store.PutKV(ctx, bucket, logKey(ns, seq), raw); err != nil {
		// The write may still land: reload the projection from the log
		// before the next command rather than guess.
		n.proj = nil
		return 0, fmt.Errorf("mailbox: append to %s: %w", ns, err)
	}
	p.apply(seq, r)
	return seq, nil
}

// Append validates msg and appends it to the log; it returns once the message
// is synced. A retried Append with the same sender and idempotency key returns
// the first result.
func (m *Mailbox) Append(ctx context.Context, msg Message) (Sent, error) {
	s, err := m.append(ctx, msg)
	if err == nil && !s.Replayed {
		m.notify(msg.Namespace, msg.To)
	}
	return s, err
}

func (m *Mailbox) append(ctx context.Context, msg Message) (Sent, error) {
	if err := msg.validate(); err != nil {
		return Sent{}, err
	}
	n, err := m.lock(ctx, msg.Namespace)
	if err != nil {
		return Sent{}, err
	}
	defer n.mu.Unlock()
	if msg.IdempotencyKey != "" {
		if e, ok := n.proj.idem[idemKey{msg.From, msg.IdempotencyKey}]; ok {
			if e.to != msg.To || e.body != msg.Body || e.convCtx != msg.ConversationContext {
				return Sent{}, ErrIdempotencyConflict
			}
			s := e.sent
			s.Replayed = true
			return s, nil
		}
	}
	r := &record{
		Type: typeSent, From: msg.From, To: msg.To,
		ConversationContext: msg.ConversationContext, Body: msg.Body, IdempotencyKey: msg.IdempotencyKey,
	}
	seq, err := m.write(ctx, msg.Namespace, n, r)
	if err != nil {
		return Sent{}, err
	}
	return Sent{Seq: seq, Time: r.Time}, nil
}

// notify calls the Changed hook.
func (m *Mailbox) notify(ns, agent string) {
	if m.changed != nil {
		m.changed(ns, agent)
	}
}
