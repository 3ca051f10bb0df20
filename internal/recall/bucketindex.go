package recall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"

	"aicli.dev/aicli/internal/store"
)

// rebuildPage is how many documents a rebuild reads and indexes at a time.
const rebuildPage = 1000

// dirtyMarker names the file present while a bucket index is open.
const dirtyMarker = "dirty"

// bucketIndex is the bleve index of one bucket. mu orders writes: a store
// write and its index update happen under it, so the index applies them in
// store order.
type bucketIndex struct {
	ref  BucketRef
	dir  string
	tune tuning

	mu     sync.Mutex
	idx    atomic.Pointer[openIndex] // nil before open and after close
	closed bool
}

// openIndex holds an open bleve index; searches load it without b.mu, so
// they do not wait behind store writes.
type openIndex struct{ ix bleve.Index }

func (r *Recall) bucketDir(ref BucketRef) string {
	return filepath.Join(r.dir, ref.Namespace, ref.Agent, ref.Bucket)
}

// ensureOpen opens the index, rebuilding it from st when it is missing,
// unreadable or possibly stale.
func (b *bucketIndex) ensureOpen(ctx context.Context, st Store) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if b.idx.Load() != nil {
		return nil
	}
	path := filepath.Join(b.dir, mappingVersion)
	marker := filepath.Join(b.dir, dirtyMarker)
	if _, err := os.Stat(marker); err == nil {
		_ = os.RemoveAll(path) // unclean shutdown: the index may lack acknowledged writes
	}
	idx, err := bleve.OpenUsing(path, scorchConfig(b.tune))
	if err != nil {
		if idx, err = b.rebuild(ctx, st, path); err != nil {
			return err
		}
	}
	if err := writeMarker(marker); err != nil {
		_ = idx.Close()
		return err
	}
	b.idx.Store(&openIndex{ix: idx})
	return nil
}

// rebuild deletes the index at path (and any stale sibling versions) and
// indexes every document of the bucket from st.
func (b *bucketIndex) rebuild(ctx context.Context, st Store, path string) (bleve.Index, error) {
	if err := os.RemoveAll(b.dir); err != nil {
		return nil, fmt.Errorf("recall: remove index %s: %w", b.dir, err)
	}
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return nil, fmt.Errorf("recall: create index dir %s: %w", b.dir, err)
	}
	idx, err := bleve.NewUsing(path, newMapping(b.tune), bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore, scorchConfig(b.tune))
	if err != nil {
		return nil, fmt.Errorf("recall: create index %s: %w", path, err)
	}
	from := ""
	for {
		kvs, err := st.ScanKV(ctx, kvBucket, b.ref.prefix(), from, rebuildPage)
		if err == nil && len(kvs) > 0 {
			err = indexKVs(idx, kvs)
		}
		if err != nil {
			_ = idx.Close()
			return nil, fmt.Errorf("recall: rebuild index of %s: %w", b.ref, err)
		}
		if len(kvs) < rebuildPage {
			return idx, nil
		}
		from = kvs[len(kvs)-1].Key + "\x00"
	}
}

func indexKVs(idx bleve.Index, kvs []store.KV) error {
	docs := make([]Doc, 0, len(kvs))
	for _, kv := range kvs {
		d, err := decodeDoc(kv.Value)
		if err != nil {
			return fmt.Errorf("%s: %w", kv.Key, err)
		}
		docs = append(docs, d)
	}
	return batchIndex(idx, docs)
}

func batchIndex(idx bleve.Index, docs []Doc) error {
	batch := idx.NewBatch()
	for _, d := range docs {
		if err := batch.Index(d.ID, indexDoc{Title: d.Title, Tags: d.Tags, Body: d.Body}); err != nil {
			return fmt.Errorf("%s: %w", d.ID, err)
		}
	}
	return idx.Batch(batch)
}

func writeMarker(path string) error {
	f, err := os.Create(path)
	if err == nil {
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("recall: write index marker: %w", err)
	}
	return nil
}

// indexDocs adds or replaces docs (distinct IDs). Caller holds b.mu.
func (b *bucketIndex) indexDocs(docs []Doc) error {
	idx := b.idx.Load()
	if idx == nil {
		return ErrClosed
	}
	if err := indexParallel(idx.ix, docs, b.tune.parallel()); err != nil {
		return fmt.Errorf("recall: index %s: %w", b.ref, err)
	}
	return nil
}

// unindex removes id. Caller holds b.mu.
func (b *bucketIndex) unindex(id string) error {
	idx := b.idx.Load()
	if idx == nil {
		return ErrClosed
	}
	if err := idx.ix.Delete(id); err != nil {
		return fmt.Errorf("recall: unindex %s/%s: %w", b.ref, id, err)
	}
	return nil
}

// discard closes the index without flushing it and leaves the dirty marker,
// so the next use rebuilds it from the store: after a failed write the
// index may differ from the store. Caller holds b.mu.
func (b *bucketIndex) discard() {
	if idx := b.idx.Swap(nil); idx != nil {
		_ = idx.ix.Close()
	}
}

// close closes the index and removes the dirty marker: the index now holds
// every acknowledged write.
func (b *bucketIndex) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	idx := b.idx.Swap(nil)
	if idx == nil {
		return nil
	}
	ferr := flush(idx.ix)
	err := idx.ix.Close()
	if ferr != nil {
		return fmt.Errorf("recall: flush index of %s: %w", b.ref, ferr) // the marker stays: rebuilt at next open
	}
	if err != nil {
		return fmt.Errorf("recall: close index of %s: %w", b.ref, err)
	}
	if err := os.Remove(filepath.Join(b.dir, dirtyMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("recall: remove index marker: %w", err)
	}
	return nil
}
