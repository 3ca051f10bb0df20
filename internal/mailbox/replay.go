package mailbox

import (
	"context"
	"fmt"
)

// replayPage is how many log entries one scan reads.
const replayPage = 4096

// replay feeds fn the log events under prefix ("" = every namespace), in key
// order (per namespace, sequence order).
func (m *Mailbox) replay(ctx context.Context, prefix string, fn func(ns string, seq uint64, r *record)) error {
	from := ""
	for {
		kvs, err := m.store.ScanKV(ctx, bucket, prefix, from, replayPage)
		if err != nil {
			return fmt.Errorf("mailbox: replay: %w", err)
		}
		for _, kv := range kvs {
			ns, seq, r, err := decode(kv.Key, kv.Value)
			if err != nil {
				return err
			}
			fn(ns, seq, r)
		}
		if len(kvs) < replayPage {
			return nil
		}
		from = kvs[len(kvs)-1].Key + "\x00"
	}
}

// load builds a namespace's projection from its log.
func (m *Mailbox) load(ctx context.Context, ns string) (*projection, error) {
	p := newProjection()
	err := m.replay(ctx, nsPrefix(ns), func(_ string, seq uint64, r *record) { p.apply(seq, r) })
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Rebuild drops the namespace's projection (inboxes, cursors, idempotency
// keys) and rebuilds it by replaying its log.
func (m *Mailbox) Rebuild(ctx context.Context, ns string) error {
	if err := checkName("namespace", ns); err != nil {
		return err
	}
	n, err := m.lock(ctx, ns)
	if err != nil {
		return err
	}
	defer n.mu.Unlock()
	n.proj = nil
	p, err := m.load(ctx, ns)
	if err != nil {
		return err
	}
	n.proj = p
	return nil
}
