package mailbox

import (
	"context"
	"fmt"
)

// InboxOptions select the messages Inbox returns.
type InboxOptions struct {
	// UnreadOnly lists only messages after the read cursor.
	UnreadOnly bool
	// After lists only messages with a higher sequence (paging).
	After uint64
	// Limit caps the number of messages; <= 0 means all.
	Limit int
	// Newest keeps the last Limit selected messages instead of the first
	// (still returned in sequence order).
	Newest bool
}

// Inbox returns the agent's messages in sequence order. Reading does not
// advance the cursor (see Ack).
func (m *Mailbox) Inbox(ctx context.Context, ns, agent string, opts InboxOptions) ([]Mail, error) {
	seqs, err := m.selectSeqs(ctx, ns, agent, opts)
	if err != nil {
		return nil, err
	}
	out := make([]Mail, 0, len(seqs))
	for _, seq := range seqs {
		kvs, err := m.store.ScanKV(ctx, bucket, logKey(ns, seq), "", 1)
		if err != nil {
			return nil, fmt.Errorf("mailbox: read %s/%d: %w", ns, seq, err)
		}
		if len(kvs) == 0 {
			return nil, fmt.Errorf("mailbox: message %s/%d missing from the log", ns, seq)
		}
		_, _, r, err := decode(kvs[0].Key, kvs[0].Value)
		if err != nil {
			return nil, err
		}
		out = append(out, r.mail(seq))
	}
	return out, nil
}

// selectSeqs picks the sequences Inbox lists, under the namespace lock.
func (m *Mailbox) selectSeqs(ctx context.Context, ns, agent string, opts InboxOptions) ([]uint64, error) {
	n, b, err := m.lockInbox(ctx, ns, agent)
	if err != nil {
		return nil, err
	}
	defer n.mu.Unlock()
	if b == nil {
		return nil, nil
	}
	from := opts.After
	if opts.UnreadOnly {
		from = max(from, b.cursor)
	}
	seqs := b.seqs[b.after(from):]
	if opts.Limit > 0 && len(seqs) > opts.Limit {
		if opts.Newest {
			seqs = seqs[len(seqs)-opts.Limit:]
		} else {
			seqs = seqs[:opts.Limit]
		}
	}
	return append([]uint64(nil), seqs...), nil
}

// Ack marks the agent's messages up to upTo read and returns the cursor. The
// cursor only moves forward, and never past the agent's last message: an
// older or repeated Ack changes nothing and writes nothing. An advance is a
// synced inbox_read event in the log.
func (m *Mailbox) Ack(ctx context.Context, ns, agent string, upTo uint64) (uint64, error) {
	cur, moved, err := m.ack(ctx, ns, agent, upTo)
	if moved {
		m.notify(ns, agent)
	}
	return cur, err
}

// ack is Ack under the namespace lock; moved reports a written advance.
func (m *Mailbox) ack(ctx context.Context, ns, agent string, upTo uint64) (cur uint64, moved bool, err error) {
	n, b, err := m.lockInbox(ctx, ns, agent)
	if err != nil {
		return 0, false, err
	}
	defer n.mu.Unlock()
	if b == nil {
		return 0, false, nil
	}
	i := b.after(upTo) // b.seqs[i-1] is the last message at or below upTo
	if i == 0 || b.seqs[i-1] <= b.cursor {
		return b.cursor, false, nil
	}
	to := b.seqs[i-1]
	if _, err := m.write(ctx, ns, n, &record{Type: typeRead, Agent: agent, UpTo: to}); err != nil {
		return 0, false, err
	}
	return to, true, nil
}

// Unread is the number of the agent's messages after its read cursor.
func (m *Mailbox) Unread(ctx context.Context, ns, agent string) (int, error) {
	n, b, err := m.lockInbox(ctx, ns, agent)
	if err != nil {
		return 0, err
	}
	defer n.mu.Unlock()
	if b == nil {
		return 0, nil
	}
	return len(b.seqs) - b.after(b.cursor), nil
}

// Cursor is the agent's read cursor (0: nothing read).
func (m *Mailbox) Cursor(ctx context.Context, ns, agent string) (uint64, error) {
	n, b, err := m.lockInbox(ctx, ns, agent)
	if err != nil {
		return 0, err
	}
	defer n.mu.Unlock()
	if b == nil {
		return 0, nil
	}
	return b.cursor, nil
}

// lockInbox validates the names, locks the namespace (the caller unlocks
// n.mu) and returns the agent's inbox, nil when it has none yet.
func (m *Mailbox) lockInbox(ctx context.Context, ns, agent string) (*namespace, *inbox, error) {
	if err := checkNames(ns, agent); err != nil {
		return nil, nil, err
	}
	n, err := m.lock(ctx, ns)
	if err != nil {
		return nil, nil, err
	}
	return n, n.proj.inboxes[agent], nil
}

func checkNames(ns, agent string) error {
	if err := checkName("namespace", ns); err != nil {
		return err
	}
	return checkName("agent", agent)
}
