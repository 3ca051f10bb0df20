package history

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"

	"aicli.dev/aicli/internal/transcript"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// ckptPrefix starts the bleve internal key of a conversation's checkpoint.
const ckptPrefix = "ckpt/"

// run is the indexing goroutine: the first catch-up, then queued batches
// and barriers, and a periodic catch-up while one is needed.
func (x *Index) run(ctx context.Context) {
	defer close(x.done)
	x.logErr(x.catchUp(ctx), "catch-up at open")
	tick := time.NewTicker(x.opts.CatchUpInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-x.queue:
			x.apply(ctx, x.drain(r))
		case <-tick.C:
			if x.dropped.Swap(false) || len(x.pending) > 0 {
				x.logErr(x.catchUp(ctx), "periodic catch-up")
			}
		}
	}
}

func (x *Index) logErr(err error, what string) {
	if err != nil && !errors.Is(err, context.Canceled) {
		x.log.Error("history: "+what, "err", err)
	}
}

// drain returns r and the requests queued behind it, up to the first
// barrier (included) or about one batch of entries.
func (x *Index) drain(r request) []request {
	reqs := []request{r}
	n := len(r.entries)
	for r.sync == nil && n < x.opts.BatchSize {
		select {
		case r = <-x.queue:
			reqs = append(reqs, r)
			n += len(r.entries)
		default:
			return reqs
		}
	}
	return reqs
}

// apply indexes queued batches in one index batch, then answers barriers.
// A batch that fails is left to the next catch-up (its checkpoint did not
// move).
func (x *Index) apply(ctx context.Context, reqs []request) {
	b := x.newBatcher()
	for _, r := range reqs {
		if r.sync != nil {
			err := b.flush()
			if err == nil && r.catchUp {
				err = x.catchUp(ctx)
			}
			r.sync <- err
			continue
		}
		x.retryLater(x.applyCommitted(ctx, b, r.uid, r.entries), "indexing committed entries")
	}
	x.retryLater(b.flush(), "indexing committed entries")
}

// retryLater logs err and asks for a catch-up at the next tick.
func (x *Index) retryLater(err error, what string) {
	if err != nil {
		x.dropped.Store(true)
		x.logErr(err, what)
	}
}

// applyCommitted indexes a committed batch of uid that continues its
// checkpoint; a batch after a gap makes it read the gap from the store.
func (x *Index) applyCommitted(ctx context.Context, b *batcher, uid string, entries []transcriptwire.Entry) error {
	ck, err := b.checkpoint(uid)
	if err != nil {
		return err
	}
	if entries[len(entries)-1].Cursor <= ck {
		return nil // already indexed (a catch-up got there first)
	}
	conv, ok, err := x.resolveUID(ctx, uid)
	if err != nil || !ok {
		return err
	}
	if entries[0].Cursor > ck+1 {
		return x.catchUpConv(ctx, b, uid, conv, ck)
	}
	for _, e := range entries {
		if e.Cursor > ck {
			if err := b.add(uid, conv, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolveUID resolves uid, recording an unknown one as pending.
func (x *Index) resolveUID(ctx context.Context, uid string) (Conversation, bool, error) {
	conv, ok, err := x.resolve.Resolve(ctx, uid)
	if err != nil {
		return Conversation{}, false, fmt.Errorf("resolving conversation %s: %w", uid, err)
	}
	if !ok {
		x.pending[uid] = true
		return Conversation{}, false, nil
	}
	delete(x.pending, uid)
	return conv, true, nil
}

// catchUp indexes, for every conversation in the transcript side table, the
// entries after its checkpoint.
func (x *Index) catchUp(ctx context.Context) error {
	b := x.newBatcher()
	from := ""
	for {
		kvs, err := x.st.ScanKV(ctx, transcript.Bucket, "", from, 1)
		if err != nil {
			return fmt.Errorf("history: catch-up: %w", err)
		}
		if len(kvs) == 0 {
			return b.flush()
		}
		uid, _, ok := strings.Cut(kvs[0].Key, "/")
		if !ok {
			return fmt.Errorf("history: catch-up: malformed transcript key %q", kvs[0].Key)
		}
		from = uid + "/\xff" // past every key of uid
		if err := x.catchUpUID(ctx, b, uid); err != nil {
			if ctx.Err() != nil {
				return err
			}
			x.retryLater(err, "catch-up") // the other conversations go on
		}
	}
}

func (x *Index) catchUpUID(ctx context.Context, b *batcher, uid string) error {
	ck, err := b.checkpoint(uid)
	if err != nil {
		return err
	}
	next, err := x.st.ScanKV(ctx, transcript.Bucket, uid+"/", transcript.Key(uid, ck+1), 1)
	if err != nil || len(next) == 0 {
		return err // nothing new: no need to resolve
	}
	conv, ok, err := x.resolveUID(ctx, uid)
	if err != nil || !ok {
		return err
	}
	return x.catchUpConv(ctx, b, uid, conv, ck)
}

// catchUpConv indexes uid's entries after cursor ck from the side table.
func (x *Index) catchUpConv(ctx context.Context, b *batcher, uid string, conv Conversation, ck int64) error {
	for {
		kvs, err := x.st.ScanKV(ctx, transcript.Bucket, uid+"/", transcript.Key(uid, ck+1), x.opts.BatchSize)
		if err != nil {
			return fmt.Errorf("history: read transcript %s: %w", uid, err)
		}
		for _, kv := range kvs {
			e, err := transcript.DecodeEntry(kv.Value)
			if err != nil {
				return fmt.Errorf("history: transcript %s: %w", kv.Key, err)
			}
			if err := b.add(uid, conv, e); err != nil {
				return err
			}
			ck = e.Cursor
		}
		if len(kvs) < x.opts.BatchSize {
			return nil
		}
	}
}

// batcher accumulates documents and checkpoint updates into bleve batches
// of up to BatchSize documents; a checkpoint is written in the same batch as
// the last entry it covers.
type batcher struct {
	x     *Index
	batch *bleve.Batch
	n     int
	ckpt  map[string]int64 // checkpoints in the unflushed batch
}

func (x *Index) newBatcher() *batcher {
	return &batcher{x: x, batch: x.ix.NewBatch(), ckpt: map[string]int64{}}
}

// checkpoint is uid's indexed-up-to cursor, counting the unflushed batch.
func (b *batcher) checkpoint(uid string) (int64, error) {
	if ck, ok := b.ckpt[uid]; ok {
		return ck, nil
	}
	if ck, ok := b.x.ckpt[uid]; ok {
		return ck, nil
	}
	val, err := b.x.ix.GetInternal([]byte(ckptPrefix + uid))
	if err != nil {
		return 0, fmt.Errorf("history: read checkpoint of %s: %w", uid, err)
	}
	var ck int64
	if len(val) > 0 {
		if ck, err = strconv.ParseInt(string(val), 10, 64); err != nil {
			return 0, fmt.Errorf("history: checkpoint of %s: %w", uid, err)
		}
	}
	b.x.ckpt[uid] = ck
	return ck, nil
}

func (b *batcher) add(uid string, conv Conversation, e transcriptwire.Entry) error {
	agent := conv.Namespace + "/" + conv.Agent
	doc := indexDoc{Text: e.Text, Agent: agent, Conv: agent + "/" + conv.Name, Speaker: e.Speaker, Time: e.Time}
	if err := b.batch.Index(transcript.Key(uid, e.Cursor), doc); err != nil {
		return fmt.Errorf("history: index %s/%d: %w", uid, e.Cursor, err)
	}
	b.ckpt[uid] = e.Cursor
	b.n++
	if b.n >= b.x.opts.BatchSize {
		return b.flush()
	}
	return nil
}

// flush applies the batch and its checkpoints; only then do they count as
// indexed.
func (b *batcher) flush() error {
	if b.n == 0 && len(b.ckpt) == 0 {
		return nil
	}
	for uid, ck := range b.ckpt {
		b.batch.SetInternal([]byte(ckptPrefix+uid), []byte(strconv.FormatInt(ck, 10)))
	}
	err := b.x.ix.Batch(b.batch)
	if err == nil {
		for uid, ck := range b.ckpt {
			b.x.ckpt[uid] = ck
		}
	}
	// On failure the entries are dropped with their checkpoints, which stay
	// where they were: a catch-up indexes them again.
	b.batch.Reset()
	b.n = 0
	clear(b.ckpt)
	if err != nil {
		return fmt.Errorf("history: apply index batch: %w", err)
	}
	return nil
}
