package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"aicli.dev/aicli/internal/recall/recallwire"
)

// Document limits.
const (
	// MaxBodyBytes is the largest document body accepted (256 KiB).
	MaxBodyBytes = recallwire.MaxBodyBytes
	// MaxTitleBytes is the largest title accepted.
	MaxTitleBytes = 1 << 10
	// MaxTags is the largest number of tags on one document.
	MaxTags = 64
)

// ErrTooLarge is wrapped by the error refusing a document over a limit.
var ErrTooLarge = errors.New("document too large")

// Doc is one document of a recall bucket.
type Doc struct {
	// ID names the document in its bucket; Put assigns a time-ordered one
	// when it is empty.
	ID    string   `json:"id"`
	Title string   `json:"title,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Body  string   `json:"body"`
	// Updated is set by Put.
	Updated time.Time `json:"updated"`
}

func (d *Doc) check() error {
	if strings.TrimSpace(d.Body) == "" {
		return fmt.Errorf("recall: document body is empty: %w", ErrInvalid)
	}
	if len(d.Body) > MaxBodyBytes {
		return fmt.Errorf("recall: document body is %d bytes, over the limit of %d bytes (256 KiB): %w",
			len(d.Body), MaxBodyBytes, ErrTooLarge)
	}
	if len(d.Title) > MaxTitleBytes {
		return fmt.Errorf("recall: document title is %d bytes, over the limit of %d bytes: %w",
			len(d.Title), MaxTitleBytes, ErrTooLarge)
	}
	if len(d.Tags) > MaxTags {
		return fmt.Errorf("recall: document has %d tags, over the limit of %d: %w", len(d.Tags), MaxTags, ErrTooLarge)
	}
	if d.ID != "" {
		return checkName("document id", d.ID)
	}
	return nil
}

// newID returns a time-ordered document ID: 12 hex digits of Unix
// milliseconds, then 8 random hex digits.
func newID(now time.Time) string {
	return fmt.Sprintf("%012x%08x", now.UnixMilli(), rand.Uint32())
}

func (r *Recall) prepare(d Doc) (Doc, []byte, error) {
	if err := d.check(); err != nil {
		return Doc{}, nil, err
	}
	now := r.clock()
	if d.ID == "" {
		d.ID = newID(now)
	}
	d.Updated = now.UTC()
	val, err := json.Marshal(d)
	if err != nil {
		return Doc{}, nil, fmt.Errorf("recall: encode document: %w", err)
	}
	return d, val, nil
}

// Put stores d in ref (replacing a document with the same ID) and indexes
// it. It returns the stored document once it is synced to the store.
func (r *Recall) Put(ctx context.Context, ref BucketRef, d Doc) (Doc, error) {
	out, err := r.PutMany(ctx, ref, []Doc{d})
	if err != nil {
		return Doc{}, err
	}
	return out[0], nil
}

// PutMany stores and indexes docs in ref as one index batch; every document
// is checked before anything is written. The store writes run concurrently
// and share the store's group commit.
func (r *Recall) PutMany(ctx context.Context, ref BucketRef, docs []Doc) ([]Doc, error) {
	b, err := r.bucket(ctx, ref)
	if err != nil {
		return nil, err
	}
	out := make([]Doc, len(docs))
	vals := make([][]byte, len(docs))
	for i, d := range docs {
		if out[i], vals[i], err = r.prepare(d); err != nil {
			return nil, err
		}
	}
	uniq, uvals := lastOfEachID(out, vals)
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.tune.serialStore {
		if err := putAll(ctx, r.st, ref, uniq, uvals); err != nil {
			return nil, err
		}
		if err := b.indexDocs(uniq); err != nil {
			b.discard()
			return nil, err
		}
		return out, nil
	}
	// The store writes (each waiting for a shared fsync) and the indexing
	// (CPU) run at once. A search in between may find a document not yet
	// synced; it reads the hit from the store, which waits for the sync.
	stored := make(chan error, 1)
	go func() { stored <- putAll(ctx, r.st, ref, uniq, uvals) }()
	ierr := b.indexDocs(uniq)
	if err := errors.Join(<-stored, ierr); err != nil {
		b.discard() // the index may hold what the store refused: rebuild it
		return nil, err
	}
	return out, nil
}

// lastOfEachID drops all but the last of documents sharing an ID, which is
// the one a sequence of Puts would have left.
func lastOfEachID(docs []Doc, vals [][]byte) ([]Doc, [][]byte) {
	last := make(map[string]int, len(docs))
	for i, d := range docs {
		last[d.ID] = i
	}
	if len(last) == len(docs) {
		return docs, vals
	}
	ud, uv := make([]Doc, 0, len(last)), make([][]byte, 0, len(last))
	for i, d := range docs {
		if last[d.ID] == i {
			ud, uv = append(ud, d), append(uv, vals[i])
		}
	}
	return ud, uv
}

// Get returns the document id of ref; a missing one is the store's NotFound
// error.
func (r *Recall) Get(ctx context.Context, ref BucketRef, id string) (Doc, error) {
	if err := ref.validate(); err != nil {
		return Doc{}, err
	}
	if err := checkName("document id", id); err != nil {
		return Doc{}, err
	}
	val, err := r.st.GetKV(ctx, kvBucket, ref.key(id))
	if err != nil {
		return Doc{}, fmt.Errorf("recall: get %s/%s: %w", ref, id, err)
	}
	return decodeDoc(val)
}

// List returns up to limit (<= 0: all) documents of ref in ID order,
// starting after the ID after ("" from the first).
func (r *Recall) List(ctx context.Context, ref BucketRef, limit int, after string) ([]Doc, error) {
	if err := ref.validate(); err != nil {
		return nil, err
	}
	from := ""
	if after != "" {
		from = ref.key(after) + "\x00"
	}
	kvs, err := r.st.ScanKV(ctx, kvBucket, ref.prefix(), from, limit)
	if err != nil {
		return nil, fmt.Errorf("recall: list %s: %w", ref, err)
	}
	out := make([]Doc, 0, len(kvs))
	for _, kv := range kvs {
		d, err := decodeDoc(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("recall: list %s: %s: %w", ref, kv.Key, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Delete removes document id from ref and its index. Deleting an absent
// document is not an error.
func (r *Recall) Delete(ctx context.Context, ref BucketRef, id string) error {
	if err := checkName("document id", id); err != nil {
		return err
	}
	b, err := r.bucket(ctx, ref)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.st.DeleteKV(ctx, kvBucket, ref.key(id)); err != nil {
		return fmt.Errorf("recall: delete %s/%s: %w", ref, id, err)
	}
	return b.unindex(id)
}

func decodeDoc(val []byte) (Doc, error) {
	var d Doc
	if err := json.Unmarshal(val, &d); err != nil {
		return Doc{}, fmt.Errorf("recall: decode document: %w", err)
	}
	return d, nil
}
