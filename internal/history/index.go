package history

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"

	"aicli.dev/aicli/internal/history/historywire"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// Store is the part of the supervisor store the index reads: the transcript
// side table. *store.Store implements it.
type Store interface {
	ScanKV(ctx context.Context, bucket, prefix, from string, limit int) ([]store.KV, error)
}

// Conversation names the conversation a transcript belongs to.
type Conversation struct {
	Namespace, Agent, Name string
}

// Resolver maps a conversation uid (the transcript side table's key) to its
// names. ok is false when no conversation has that uid (yet): its entries
// are retried at the next catch-up.
type Resolver interface {
	Resolve(ctx context.Context, uid string) (c Conversation, ok bool, err error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, uid string) (Conversation, bool, error)

// Resolve calls f.
func (f ResolverFunc) Resolve(ctx context.Context, uid string) (Conversation, bool, error) {
	return f(ctx, uid)
}

// Hit is one search result (see historywire.Hit).
type Hit = historywire.Hit

// Options tune an Index; the zero value is usable.
type Options struct {
	// Logger receives indexing errors (default: discard).
	Logger *slog.Logger
	// QueueSize bounds the committed batches waiting to be indexed (default
	// 1024); a batch arriving at a full queue is dropped and recovered by
	// the next catch-up.
	QueueSize int
	// BatchSize is how many entries one index batch holds at most (default
	// 1000).
	BatchSize int
	// CatchUpInterval is how often a catch-up runs when one is needed (a
	// batch was dropped, a uid was unresolved); default 30s.
	CatchUpInterval time.Duration
}

// ErrClosed is returned by calls on a closed Index.
var ErrClosed = errors.New("history: closed")

// Index is the transcript history index: a bleve index kept up to date by
// one indexing goroutine.
type Index struct {
	st      Store
	resolve Resolver
	opts    Options
	log     *slog.Logger
	ix      bleve.Index

	queue   chan request
	dropped atomic.Bool
	stop    context.CancelFunc // ends the indexer's context
	done    chan struct{}
	closed  atomic.Bool

	// Owned by the indexing goroutine.
	ckpt    map[string]int64 // uid → indexed up to cursor
	pending map[string]bool  // uids with entries the Resolver did not know
}

// request is a committed batch to index, or (sync set) a barrier: the
// indexer answers sync after everything queued before it, running a full
// catch-up first when catchUp is set.
type request struct {
	uid     string
	entries []transcriptwire.Entry
	sync    chan error
	catchUp bool
}

// Open opens (or creates) the index under dir and starts indexing: first a
// catch-up of every conversation from its checkpoint — a full rebuild when
// the index was missing or unreadable — then the batches handed to
// Committed. Open does not wait for the catch-up; CatchUp does. Close stops
// the indexer and closes the index; st is not closed.
func Open(ctx context.Context, st Store, dir string, resolve Resolver, opts Options) (*Index, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 1024
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1000
	}
	if opts.CatchUpInterval <= 0 {
		opts.CatchUpInterval = 30 * time.Second
	}
	ix, err := openIndex(dir)
	if err != nil {
		return nil, err
	}
	x := &Index{st: st, resolve: resolve, opts: opts, log: opts.Logger, ix: ix,
		queue: make(chan request, opts.QueueSize), done: make(chan struct{}),
		ckpt: map[string]int64{}, pending: map[string]bool{}}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	x.stop = stop
	go x.run(runCtx)
	return x, nil
}

// openIndex opens dir/<mappingVersion>, or recreates dir with an empty one
// when it is missing, unreadable or another version's.
func openIndex(dir string) (bleve.Index, error) {
	path := filepath.Join(dir, mappingVersion)
	if ix, err := bleve.Open(path); err == nil {
		return ix, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("history: remove index %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("history: create index dir %s: %w", dir, err)
	}
	ix, err := bleve.New(path, newMapping())
	if err != nil {
		return nil, fmt.Errorf("history: create index %s: %w", path, err)
	}
	return ix, nil
}

// Committed queues entries just committed to conversation uid's transcript
// for indexing; set it as transcript.StoreLog.Committed. It never blocks: on
// a full queue the batch is dropped and a catch-up recovers it.
func (x *Index) Committed(uid string, entries []transcriptwire.Entry) {
	if x.closed.Load() || len(entries) == 0 {
		return
	}
	select {
	case x.queue <- request{uid: uid, entries: entries}:
	default:
		x.dropped.Store(true)
	}
}

// Flush waits until every batch queued before it is indexed (or dropped).
func (x *Index) Flush(ctx context.Context) error { return x.barrier(ctx, false) }

// CatchUp waits until every batch queued before it is indexed and then runs
// a full catch-up from the transcript side table (the first one, started by
// Open, is done by then too). It returns the catch-up's error.
func (x *Index) CatchUp(ctx context.Context) error { return x.barrier(ctx, true) }

func (x *Index) barrier(ctx context.Context, catchUp bool) error {
	r := request{sync: make(chan error, 1), catchUp: catchUp}
	select {
	case x.queue <- r:
	case <-x.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.sync:
		return err
	case <-x.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the indexer (after the batch it is applying) and closes the
// index. Queued batches not yet indexed are recovered by the next Open.
func (x *Index) Close() error {
	if x.closed.Swap(true) {
		return nil
	}
	x.stop()
	<-x.done
	if err := x.ix.Close(); err != nil {
		return fmt.Errorf("history: close index: %w", err)
	}
	return nil
}
