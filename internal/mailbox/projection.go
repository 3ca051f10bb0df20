package mailbox

import (
	"sort"
	"time"
)

// inbox is one recipient's projection: the sequences of its messages, in
// order, and its read cursor (every message at or below it is read).
type inbox struct {
	seqs   []uint64
	cursor uint64
}

// after is the index of the first message with a sequence above seq.
func (b *inbox) after(seq uint64) int {
	return sort.Search(len(b.seqs), func(i int) bool { return b.seqs[i] > seq })
}

type idemKey struct{ from, key string }

// idemEntry is what an idempotency key answers, and what it was used for.
type idemEntry struct {
	sent              Sent
	to, body, convCtx string
}

// projection is a namespace's state derived from its log.
type projection struct {
	last     uint64
	lastTime time.Time
	inboxes  map[string]*inbox
	idem     map[idemKey]idemEntry
}

func newProjection() *projection {
	return &projection{inboxes: map[string]*inbox{}, idem: map[idemKey]idemEntry{}}
}

func (p *projection) inbox(agent string) *inbox {
	b := p.inboxes[agent]
	if b == nil {
		b = &inbox{}
		p.inboxes[agent] = b
	}
	return b
}

// apply folds one log event into the projection. Events arrive in sequence
// order.
func (p *projection) apply(seq uint64, r *record) {
	p.last = max(p.last, seq)
	if r.Time.After(p.lastTime) {
		p.lastTime = r.Time
	}
	switch r.Type {
	case typeSent:
		b := p.inbox(r.To)
		b.seqs = append(b.seqs, seq)
		if r.IdempotencyKey != "" {
			p.idem[idemKey{r.From, r.IdempotencyKey}] = idemEntry{
				sent: Sent{Seq: seq, Time: r.Time},
				to:   r.To, body: r.Body, convCtx: r.ConversationContext,
			}
		}
	case typeRead:
		b := p.inbox(r.Agent)
		b.cursor = max(b.cursor, r.UpTo)
	}
}
