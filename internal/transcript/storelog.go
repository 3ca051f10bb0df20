package transcript

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// Bucket is the store side-table bucket holding every transcript, keyed
// "<conversation uid>/<cursor as 16 hex digits>" (Key) so a prefix scan
// reads one conversation in cursor order.
const Bucket = "transcript"

// bucket is the short local name of Bucket.
const bucket = Bucket

// KVStore is the part of the event store the transcript log uses.
type KVStore interface {
	PutKV(ctx context.Context, bucket, key string, val []byte) error
	ScanKV(ctx context.Context, bucket, prefix, from string, limit int) ([]store.KV, error)
}

// StoreLog is the durable transcript log in the supervisor's event store.
// Every entry is a synced write (shared fsyncs with concurrent writers); an
// entry is visible to readers only once acknowledged, so a crash can lose at
// most entries nobody has seen.
type StoreLog struct {
	Store KVStore
	// Committed, when set, is called after each Append that committed
	// entries, outside the log's locks, with the committed entries in
	// cursor order. It must not block (the history index only queues them).
	Committed func(uid string, entries []transcriptwire.Entry)

	mu    sync.Mutex
	convs map[string]*convLog
}

type convLog struct {
	mu     sync.Mutex
	loaded bool
	last   int64 // last acknowledged cursor
	native map[string]bool
	// changed is closed and replaced after every append.
	changed chan struct{}
}

// Key is the side-table key of entry cursor of conversation uid.
func Key(uid string, cursor int64) string { return fmt.Sprintf("%s/%016x", uid, cursor) }

func key(uid string, cursor int64) string { return Key(uid, cursor) }

// DecodeEntry decodes a side-table value of Bucket.
func DecodeEntry(val []byte) (transcriptwire.Entry, error) {
	var e transcriptwire.Entry
	err := json.Unmarshal(val, &e)
	return e, err
}

func (l *StoreLog) conv(uid string) *convLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.convs == nil {
		l.convs = map[string]*convLog{}
	}
	c := l.convs[uid]
	if c == nil {
		c = &convLog{native: map[string]bool{}, changed: make(chan struct{})}
		l.convs[uid] = c
	}
	return c
}

// load reads the committed entries of one conversation once per process:
// the last cursor and the native ids already present. c.mu must be held.
func (l *StoreLog) load(ctx context.Context, uid string, c *convLog) error {
	if c.loaded {
		return nil
	}
	from := ""
	for {
		kvs, err := l.Store.ScanKV(ctx, bucket, uid+"/", from, 1000)
		if err != nil {
			return fmt.Errorf("transcript %s: %w", uid, err)
		}
		for _, kv := range kvs {
			e, err := DecodeEntry(kv.Value)
			if err != nil {
				return fmt.Errorf("transcript %s: entry %s: %w", uid, kv.Key, err)
			}
			c.last = e.Cursor
			if e.NativeID != "" {
				c.native[e.NativeID] = true
			}
		}
		if len(kvs) < 1000 {
			break
		}
		from = key(uid, c.last+1)
	}
	c.loaded = true
	return nil
}

// Append commits entries in order, assigning cursors; entries whose NativeID
// is already committed are skipped. It returns the committed entries (also
// on error: those committed before it) and then reports them to Committed.
func (l *StoreLog) Append(ctx context.Context, uid string, entries []transcriptwire.Entry) ([]transcriptwire.Entry, error) {
	out, err := l.append(ctx, uid, entries)
	if len(out) > 0 && l.Committed != nil {
		l.Committed(uid, out)
	}
	return out, err
}

func (l *StoreLog) append(ctx context.Context, uid string, entries []transcriptwire.Entry) ([]transcriptwire.Entry, error) {
	c := l.conv(uid)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := l.load(ctx, uid, c); err != nil {
		return nil, err
	}
	var out []transcriptwire.Entry
	defer func() {
		if len(out) > 0 {
			close(c.changed)
			c.changed = make(chan struct{})
		}
	}()
	for _, e := range entries {
		if e.NativeID != "" && c.native[e.NativeID] {
			continue
		}
		e.Cursor = c.last + 1
		val, err := json.Marshal(e)
		if err != nil {
			return out, err
		}
		if err := l.Store.PutKV(ctx, bucket, key(uid, e.Cursor), val); err != nil {
			return out, fmt.Errorf("transcript %s: %w", uid, err)
		}
		c.last = e.Cursor
		if e.NativeID != "" {
			c.native[e.NativeID] = true
		}
		out = append(out, e)
	}
	return out, nil
}

// Read returns up to limit committed entries with Cursor >= from (0 and 1
// both mean the beginning), oldest first.
func (l *StoreLog) Read(ctx context.Context, uid string, from int64, limit int) ([]transcriptwire.Entry, error) {
	c := l.conv(uid)
	c.mu.Lock()
	err := l.load(ctx, uid, c)
	last := c.last
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return l.read(ctx, uid, from, last, limit)
}

func (l *StoreLog) read(ctx context.Context, uid string, from, last int64, limit int) ([]transcriptwire.Entry, error) {
	if from < 1 {
		from = 1
	}
	if from > last {
		return nil, nil
	}
	if n := last - from + 1; limit <= 0 || int64(limit) > n {
		limit = int(n)
	}
	kvs, err := l.Store.ScanKV(ctx, bucket, uid+"/", key(uid, from), limit)
	if err != nil {
		return nil, fmt.Errorf("transcript %s: %w", uid, err)
	}
	out := make([]transcriptwire.Entry, 0, len(kvs))
	for _, kv := range kvs {
		e, err := DecodeEntry(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("transcript %s: entry %s: %w", uid, kv.Key, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Last returns the cursor of the conversation's last committed entry (0: none).
func (l *StoreLog) Last(ctx context.Context, uid string) (int64, error) {
	c := l.conv(uid)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := l.load(ctx, uid, c); err != nil {
		return 0, err
	}
	return c.last, nil
}

// Subscribe delivers committed entries with Cursor >= from: the backlog
// first, then each new one, until ctx ends (the channel is then closed).
func (l *StoreLog) Subscribe(ctx context.Context, uid string, from int64) (<-chan transcriptwire.Entry, error) {
	c := l.conv(uid)
	c.mu.Lock()
	err := l.load(ctx, uid, c)
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if from < 1 {
		from = 1
	}
	ch := make(chan transcriptwire.Entry, 64)
	go func() {
		defer close(ch)
		next := from
		for {
			c.mu.Lock()
			last, changed := c.last, c.changed
			c.mu.Unlock()
			for next <= last {
				batch, err := l.read(ctx, uid, next, last, 500)
				if err != nil || len(batch) == 0 {
					return
				}
				for _, e := range batch {
					select {
					case ch <- e:
					case <-ctx.Done():
						return
					}
					next = e.Cursor + 1
				}
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}
