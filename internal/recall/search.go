package recall

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
)

// MaxSearchLimit caps Search's limit; DefaultSearchLimit replaces limit <= 0.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 100
)

// Hit is one search result, best first.
type Hit struct {
	ID    string
	Title string
	// Score is the BM25 relevance; only its order within one result list
	// means anything.
	Score float64
	// Snippet is a fragment of the body with the matched terms in
	// **markers**, or the body's start when no body term matched.
	Snippet string
}

// Search runs query (bleve query-string syntax) over the bucket ref and
// returns up to limit hits, best first. A malformed query is a *QueryError.
func (r *Recall) Search(ctx context.Context, ref BucketRef, q string, limit int) ([]Hit, error) {
	if strings.TrimSpace(q) == "" {
		return nil, errors.New("recall: query is required")
	}
	qsq := query.NewQueryStringQuery(q)
	if err := qsq.Validate(); err != nil {
		return nil, newQueryError(q, err)
	}
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	b, err := r.bucket(ctx, ref)
	if err != nil {
		return nil, err
	}
	req := bleve.NewSearchRequestOptions(qsq, limit, 0, false)
	req.Fields = []string{fieldTitle, fieldBody}
	req.Highlight = bleve.NewHighlightWithStyle(snippetStyle)
	req.Highlight.AddField(fieldBody)
	res, err := b.search(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("recall: search %s: %w", ref, err)
	}
	hits := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		hit := Hit{ID: h.ID, Score: h.Score}
		hit.Title, _ = h.Fields[fieldTitle].(string)
		if frags := h.Fragments[fieldBody]; len(frags) > 0 {
			hit.Snippet = frags[0]
		} else if body, ok := h.Fields[fieldBody].(string); ok {
			hit.Snippet = leadSnippet(body)
		}
		hits = append(hits, hit)
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

// leadSnippet is the body's first 200 bytes, cut at a rune boundary.
func leadSnippet(body string) string {
	const n = 200
	if len(body) <= n {
		return body
	}
	cut := n
	for cut > 0 && !utf8RuneStart(body[cut]) {
		cut--
	}
	return body[:cut] + "…"
}

func utf8RuneStart(c byte) bool { return c&0xC0 != 0x80 }
