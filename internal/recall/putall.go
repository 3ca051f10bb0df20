package recall

import (
	"context"
	"fmt"
	"sync"
)

// putWorkers bounds the concurrent side-table writes of one PutMany; they
// land in the same store commit groups.
const putWorkers = 64

// putAll writes every document to the side table, concurrently, and returns
// the first error.
func putAll(ctx context.Context, st Store, ref BucketRef, docs []Doc, vals [][]byte) error {
	if len(docs) == 1 {
		return putOne(ctx, st, ref, docs[0].ID, vals[0])
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		next  = make(chan int)
	)
	for range min(putWorkers, len(docs)) {
		wg.Go(func() {
			for i := range next {
				if err := putOne(ctx, st, ref, docs[i].ID, vals[i]); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		})
	}
	for i := range docs {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func putOne(ctx context.Context, st Store, ref BucketRef, id string, val []byte) error {
	if err := st.PutKV(ctx, kvBucket, ref.key(id), val); err != nil {
		return fmt.Errorf("recall: put %s/%s: %w", ref, id, err)
	}
	return nil
}
