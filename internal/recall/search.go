package recall

import (
	"context"
	"fmt"
	"strings"

	"github.com/blevesearch/bleve/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/internal/recall/recallwire"
	"aicli.dev/aicli/internal/textsearch"
)

// QueryError is a malformed search query, with the byte offset of the first
// term that cannot be parsed.
type QueryError = textsearch.QueryError

// MaxSearchLimit caps Search's limit; DefaultSearchLimit replaces limit <= 0.
const (
	DefaultSearchLimit = recallwire.DefaultSearchLimit
	MaxSearchLimit     = recallwire.MaxSearchLimit
)

// Hit is one search result, best first.
type Hit struct {
	ID    string
	Title string
	// Score is the BM25 relevance; only its order within one result list
	// means anything.
	Score float64
	// Snippet is about 200 bytes of the body around the first occurrence
	// of a query word (matched case-insensitively on its first letters, so
	// "running" finds "runs"), marked **like this**, or the body's start.
	Snippet string
}

// Search runs query (bleve query-string syntax) over the bucket ref and
// returns up to limit hits, best first. A malformed query is a *QueryError.
func (r *Recall) Search(ctx context.Context, ref BucketRef, q string, limit int) ([]Hit, error) {
	if strings.TrimSpace(q) == "" {
		return nil, fmt.Errorf("recall: query is required: %w", ErrInvalid)
	}
	qsq, err := textsearch.Parse(q)
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	if err := ref.validate(); err != nil {
		return nil, err
	}
	if empty, err := r.unopenedAndEmpty(ctx, ref); err != nil || empty {
		return nil, err // a bucket without documents: no index to create
	}
	b, err := r.bucket(ctx, ref)
	if err != nil {
		return nil, err
	}
	parsed, err := qsq.Parse()
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err) // Validate passed: not expected
	}
	req := bleve.NewSearchRequestOptions(expandFields(parsed), limit, 0, false)
	res, err := b.search(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("recall: search %s: %w", ref, err)
	}
	hits := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		d, err := r.Get(ctx, ref, h.ID)
		if apierrors.IsNotFound(err) {
			continue // deleted since the search ran
		}
		if err != nil {
			return nil, err
		}
		hits = append(hits, Hit{ID: h.ID, Title: d.Title, Score: h.Score, Snippet: textsearch.Snippet(d.Body, q)})
	}
	return hits, nil
}

func (b *bucketIndex) search(ctx context.Context, req *bleve.SearchRequest) (*bleve.SearchResult, error) {
	idx := b.idx.Load()
	if idx == nil {
		return nil, ErrClosed
	}
	return idx.ix.SearchInContext(ctx, req)
}

// unopenedAndEmpty reports whether ref's index is not open and the store
// holds no document of it, so a search need not create an index.
func (r *Recall) unopenedAndEmpty(ctx context.Context, ref BucketRef) (bool, error) {
	r.mu.Lock()
	b := r.buckets[ref]
	r.mu.Unlock()
	if b != nil && b.idx.Load() != nil {
		return false, nil
	}
	kvs, err := r.st.ScanKV(ctx, kvBucket, ref.prefix(), "", 1)
	if err != nil {
		return false, fmt.Errorf("recall: search %s: %w", ref, err)
	}
	return len(kvs) == 0, nil
}
