package store

import (
	"bytes"
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// KV is one side-table entry.
type KV struct {
	Key   string
	Value []byte
}

// ScanKV returns, in key order, up to limit (<= 0: all) side-table entries of
// bucket whose keys start with prefix and are >= from ("" means from the
// first). Side-table keys may contain '/', so a prefix like "<id>/" scans one
// sub-sequence. Like GetKV it returns only durable entries: if the scan saw a
// write still waiting for its fsync, it waits for that fsync before
// returning.
func (s *Store) ScanKV(ctx context.Context, bucket, prefix, from string, limit int) ([]KV, error) {
	if err := checkSegment("bucket", bucket); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	lower := kvKey(bucket, prefix)
	upper := prefixEnd(lower)
	if from > prefix {
		lower = kvKey(bucket, from)
	}
	if bytes.Compare(lower, upper) >= 0 {
		return nil, nil
	}
	var out []KV
	err := s.readKV(ctx, lower, upper, func(it *pebble.Iterator, strip int) error {
		for ok := it.First(); ok && (limit <= 0 || len(out) < limit); ok = it.Next() {
			out = append(out, KV{Key: string(it.Key()[strip:]), Value: append([]byte{}, it.Value()...)})
		}
		return it.Error()
	}, bucket)
	if err != nil {
		return nil, fmt.Errorf("store: scan %s/%s: %w", bucket, prefix, err)
	}
	return out, nil
}

// LastKV returns the last side-table entry of bucket whose key starts with
// prefix, and false when there is none. Like ScanKV it returns only durable
// entries.
func (s *Store) LastKV(ctx context.Context, bucket, prefix string) (KV, bool, error) {
	if err := checkSegment("bucket", bucket); err != nil {
		return KV{}, false, apierrors.NewBadRequest(err.Error())
	}
	lower := kvKey(bucket, prefix)
	var kv KV
	var found bool
	err := s.readKV(ctx, lower, prefixEnd(lower), func(it *pebble.Iterator, strip int) error {
		if it.Last() {
			kv = KV{Key: string(it.Key()[strip:]), Value: append([]byte{}, it.Value()...)}
			found = true
		}
		return it.Error()
	}, bucket)
	if err != nil {
		return KV{}, false, fmt.Errorf("store: last %s/%s: %w", bucket, prefix, err)
	}
	return kv, found, nil
}

// readKV runs read over a pebble iterator on [lower, upper) and then waits
// until everything that iterator could see is durable.
func (s *Store) readKV(ctx context.Context, lower, upper []byte, read func(*pebble.Iterator, int) error, bucket string) error {
	s.dbMu.RLock()
	if s.dbClosed {
		s.dbMu.RUnlock()
		return ErrClosed
	}
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		s.dbMu.RUnlock()
		return err
	}
	target := s.appliedGroups.Load()
	err = read(it, len(kvKey(bucket, "")))
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	s.dbMu.RUnlock()
	if err != nil {
		return err
	}
	return s.waitDurable(ctx, target)
}
