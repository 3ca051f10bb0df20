package recall

import (
	"fmt"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
)

// scorchConfig is the runtime configuration of every bucket index.
//
// unsafe_batch: a batch returns once its segment is introduced (searchable)
// instead of waiting for the persister to write and sync it. The index is
// derived data: an unclean shutdown leaves the dirty marker and the index is
// rebuilt from the store, and a clean close flushes first (flush). This
// lets the next batch's analysis overlap the previous one's persistence.
func scorchConfig(t tuning) map[string]any {
	return map[string]any{"unsafe_batch": !t.safeBatch}
}

// tuning switches the indexing optimisations off one by one, so the
// benchmark measures each against a same-run baseline. The zero value is
// what Recall runs with.
type tuning struct {
	safeBatch   bool // wait for each batch's persistence (bleve's default)
	serialStore bool // write the store, then index (instead of both at once)
	subBatches  int  // concurrent bleve batches per PutMany; 0 means defaultSubBatches
	withAll     bool // index the _all composite field too
	// unicodeTokenizer uses bleve's "en" analyzer as is, without the
	// ASCII fast path of wordsTokenizer.
	unicodeTokenizer bool
}

// defaultSubBatches is how many concurrent bleve batches a large PutMany
// is split into. One: two cost about 8 % more CPU per document (more
// segments to merge) for no wall-clock gain measurable on 2 shared cores.
const defaultSubBatches = 1

func (t tuning) parallel() int {
	if t.subBatches == 0 {
		return defaultSubBatches
	}
	return t.subBatches
}

// flushKey is the internal key of the batch flush waits for.
var flushKey = []byte("_recall_flush")

// flush waits until everything introduced into idx so far is persisted: it
// applies a batch holding one internal write and waits for that batch's
// persisted callback (the persister writes whole snapshots, so every earlier
// batch is on disk too).
func flush(idx bleve.Index) error {
	done := make(chan error, 1)
	batch := idx.NewBatch()
	batch.SetInternal(flushKey, []byte{1})
	batch.SetPersistedCallback(func(err error) { done <- err })
	if err := idx.Batch(batch); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-time.After(flushTimeout):
		return fmt.Errorf("not persisted within %s", flushTimeout)
	}
}

// flushTimeout bounds flush: a persister that keeps failing (a full disk)
// must not hang shutdown; the index then keeps its dirty marker.
const flushTimeout = 30 * time.Second

// indexParallel indexes docs as up to n concurrent bleve batches: analysis
// already runs on bleve's worker pool, but building a batch's segment runs
// on the calling goroutine, so one batch keeps one core busy.
func indexParallel(idx bleve.Index, docs []Doc, n int) error {
	if n <= 1 || len(docs) < 2*minSubBatch {
		return batchIndex(idx, docs)
	}
	n = min(n, len(docs)/minSubBatch)
	var wg sync.WaitGroup
	errs := make([]error, n)
	per := (len(docs) + n - 1) / n
	for i := range n {
		part := docs[i*per : min(len(docs), (i+1)*per)]
		wg.Go(func() { errs[i] = batchIndex(idx, part) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// minSubBatch is the smallest batch indexParallel splits off.
const minSubBatch = 100
