package recall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"aicli.dev/aicli/internal/store"
)

// Store is the part of the supervisor store recall uses: its synced side
// table. *store.Store implements it.
type Store interface {
	PutKV(ctx context.Context, bucket, key string, val []byte) error
	GetKV(ctx context.Context, bucket, key string) ([]byte, error)
	DeleteKV(ctx context.Context, bucket, key string) error
	ScanKV(ctx context.Context, bucket, prefix, from string, limit int) ([]store.KV, error)
}

// Options tune a Recall; the zero value is usable.
type Options struct {
	// Clock stamps Doc.Updated and assigned IDs; nil means time.Now.
	Clock func() time.Time

	tune tuning // benchmarks only
}

// Recall serves the recall buckets of all agents: documents in the store,
// search through per-bucket bleve indexes under one directory.
type Recall struct {
	st    Store
	dir   string
	clock func() time.Time
	tune  tuning

	mu      sync.Mutex
	closed  bool
	buckets map[BucketRef]*bucketIndex
}

// ErrClosed is returned by calls on a closed Recall.
var ErrClosed = errors.New("recall: closed")

// Open returns a Recall over st keeping its indexes under dir (created if
// missing). Bucket indexes are opened, and rebuilt from st if missing or
// damaged, on each bucket's first use.
func Open(st Store, dir string, opts Options) (*Recall, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("recall: create index dir %s: %w", dir, err)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Recall{st: st, dir: dir, clock: opts.Clock, tune: opts.tune, buckets: map[BucketRef]*bucketIndex{}}, nil
}

// bucket returns the open index of ref, opening or rebuilding it first.
func (r *Recall) bucket(ctx context.Context, ref BucketRef) (*bucketIndex, error) {
	if err := ref.validate(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	b, ok := r.buckets[ref]
	if !ok {
		b = &bucketIndex{ref: ref, dir: r.bucketDir(ref), tune: r.tune}
		r.buckets[ref] = b
	}
	r.mu.Unlock()
	if err := b.ensureOpen(ctx, r.st); err != nil {
		return nil, err
	}
	return b, nil
}

// Close closes every open bucket index cleanly (so the next Open need not
// rebuild them). The store is not closed.
func (r *Recall) Close() error {
	r.mu.Lock()
	r.closed = true
	buckets := r.buckets
	r.buckets = nil
	r.mu.Unlock()
	var errs []error
	for _, b := range buckets {
		errs = append(errs, b.close())
	}
	return errors.Join(errs...)
}
