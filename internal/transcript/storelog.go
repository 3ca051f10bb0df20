package transcript

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// Bucket is the store side-table bucket holding every transcript, keyed
// "<conversation uid>/<cursor as 16 hex digits>" (Key) so a prefix scan
// reads one conversation in cursor order.
const Bucket = "transcript"

// bucket is the short local name of Bucket.
const bucket = Bucket

// NativeBucket indexes committed entries by the CLI's own entry id, so that an entry the guest sends again (after
// a reconnect or a restart it follows the session store from its start) is recognised without holding every id in
// memory: key "<conversation uid>/<native id>" holds the entry's cursor; key "<conversation uid>" the cursor up to
// which the index is complete (entries committed before the index existed are indexed at the conversation's first
// load). Each entry, its id and that mark are one atomic write.
const NativeBucket = "transcript-native"

// KVStore is the part of the event store the transcript log uses.
type KVStore interface {
	PutKVs(ctx context.Context, puts ...store.KVPut) error
	GetKV(ctx context.Context, bucket, key string) ([]byte, error)
	ScanKV(ctx context.Context, bucket, prefix, from string, limit int) ([]store.KV, error)
	LastKV(ctx context.Context, bucket, prefix string) (store.KV, bool, error)
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
		c = &convLog{changed: make(chan struct{})}
		l.convs[uid] = c
	}
	return c
}

// load finds the conversation's last cursor once per process and completes its native id index. c.mu must be
// held.
func (l *StoreLog) load(ctx context.Context, uid string, c *convLog) error {
	if c.loaded {
		return nil
	}
	last, found, err := l.Store.LastKV(ctx, bucket, uid+"/")
	if err != nil {
		return fmt.Errorf("transcript %s: %w", uid, err)
	}
	if found {
		e, err := DecodeEntry(last.Value)
		if err != nil {
			return fmt.Errorf("transcript %s: entry %s: %w", uid, last.Key, err)
		}
		c.last = e.Cursor
	}
	if err := l.indexNative(ctx, uid, c.last); err != nil {
		return err
	}
	c.loaded = true
	return nil
}

// indexNative adds the native ids of the entries after the index's mark, up to cursor last, to the index.
func (l *StoreLog) indexNative(ctx context.Context, uid string, last int64) error {
	var mark int64
	switch v, err := l.Store.GetKV(ctx, NativeBucket, uid); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("transcript %s: %w", uid, err)
	default:
		if mark, err = strconv.ParseInt(string(v), 10, 64); err != nil {
			return fmt.Errorf("transcript %s: native index mark %q: %w", uid, v, err)
		}
	}
	for mark < last {
		entries, err := l.read(ctx, uid, mark+1, last, 1000)
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			return nil
		}
		var puts []store.KVPut
		for _, e := range entries {
			if e.NativeID != "" {
				puts = append(puts, nativePut(uid, e))
			}
			mark = e.Cursor
		}
		if err := l.Store.PutKVs(ctx, append(puts, markPut(uid, mark))...); err != nil {
			return fmt.Errorf("transcript %s: %w", uid, err)
		}
	}
	return nil
}

func nativePut(uid string, e transcriptwire.Entry) store.KVPut {
	return store.KVPut{Bucket: NativeBucket, Key: uid + "/" + e.NativeID, Value: strconv.AppendInt(nil, e.Cursor, 10)}
}

func markPut(uid string, cursor int64) store.KVPut {
	return store.KVPut{Bucket: NativeBucket, Key: uid, Value: strconv.AppendInt(nil, cursor, 10)}
}

// HasNative reports whether conversation uid has committed an entry with the CLI's entry id native.
func (l *StoreLog) HasNative(ctx context.Context, uid, native string) (bool, error) {
	c := l.conv(uid)
	c.mu.Lock()
	err := l.load(ctx, uid, c)
	c.mu.Unlock()
	if err != nil {
		return false, err
	}
	return l.hasNative(ctx, uid, native)
}

// hasNative looks the id up with a one-key scan, a read of pebble, rather than GetKV, which queues behind the
// store's writer (this runs for every entry the pump sees).
func (l *StoreLog) hasNative(ctx context.Context, uid, native string) (bool, error) {
	key := uid + "/" + native
	kvs, err := l.Store.ScanKV(ctx, NativeBucket, key, "", 1)
	if err != nil {
		return false, fmt.Errorf("transcript %s: %w", uid, err)
	}
	return len(kvs) == 1 && kvs[0].Key == key, nil
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
		if e.NativeID != "" {
			dup, err := l.hasNative(ctx, uid, e.NativeID)
			if err != nil {
				return out, err
			}
			if dup {
				continue
			}
		}
		e.Cursor = c.last + 1
		val, err := json.Marshal(e)
		if err != nil {
			return out, err
		}
		puts := []store.KVPut{{Bucket: bucket, Key: key(uid, e.Cursor), Value: val}}
		if e.NativeID != "" {
			puts = append(puts, nativePut(uid, e))
		}
		if err := l.Store.PutKVs(ctx, append(puts, markPut(uid, e.Cursor))...); err != nil {
			return out, fmt.Errorf("transcript %s: %w", uid, err)
		}
		c.last = e.Cursor
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
