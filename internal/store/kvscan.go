package store

import (
	"context"

	"github.com/cockroachdb/pebble/v2"
)

// KV is one side-table entry.
type KV struct {
	Key   string
	Value []byte
}

// ScanKV returns, in key order, up to limit side-table entries of bucket whose
// keys start with prefix and are >= from (from "" means the first). It sees
// every acknowledged write (and possibly one still being synced: callers
// that need only durable entries track what was acknowledged). Side-table keys may contain '/', so a prefix like
// "<id>/" scans one sub-sequence.
func (s *Store) ScanKV(ctx context.Context, bucket, prefix, from string, limit int) ([]KV, error) {
	if err := checkSegment("bucket", bucket); err != nil {
		return nil, err
	}
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if s.dbClosed {
		return nil, ErrClosed
	}
	lower := kvKey(bucket, prefix)
	upper := prefixEnd(lower)
	if from > prefix {
		lower = kvKey(bucket, from)
	}
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	strip := len(kvKey(bucket, ""))
	var out []KV
	for ok := it.First(); ok && (limit <= 0 || len(out) < limit); ok = it.Next() {
		out = append(out, KV{Key: string(it.Key()[strip:]), Value: append([]byte(nil), it.Value()...)})
	}
	return out, it.Error()
}

// LastKV returns the last side-table entry of bucket whose key starts with
// prefix, and false when there is none.
func (s *Store) LastKV(ctx context.Context, bucket, prefix string) (KV, bool, error) {
	if err := checkSegment("bucket", bucket); err != nil {
		return KV{}, false, err
	}
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if s.dbClosed {
		return KV{}, false, ErrClosed
	}
	lower := kvKey(bucket, prefix)
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return KV{}, false, err
	}
	defer it.Close()
	if !it.Last() {
		return KV{}, false, it.Error()
	}
	return KV{Key: string(it.Key()[len(kvKey(bucket, "")):]), Value: append([]byte(nil), it.Value()...)}, true, nil
}
