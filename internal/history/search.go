package history

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/history/historywire"
	"aicli.dev/aicli/internal/textsearch"
	"aicli.dev/aicli/internal/transcript"
)

// QueryError is a malformed query text, with the byte offset of the first
// term that cannot be parsed.
type QueryError = textsearch.QueryError

// ErrInvalidQuery is wrapped by the error refusing a Query without a
// namespace or targets, or with a malformed target.
var ErrInvalidQuery = errors.New("invalid query")

// Query is one history search. Namespace and Targets are required: a search
// only ever sees the targets' entries.
type Query struct {
	Namespace string
	// Targets are agents, or one conversation of an agent, in Namespace.
	Targets []v1alpha1.TargetRef
	// Text is bleve's query-string syntax over the entries' text: words
	// (stemmed: "running" finds "runs"), "phrases", +required, -excluded.
	// Empty matches every entry of the targets.
	Text string
	// Speaker, when set, keeps entries of exactly this speaker (human,
	// agent, tool, mail:<agent>, injected:<monitor>).
	Speaker string
	// Since, when set, keeps entries at or after it.
	Since time.Time
	// Limit caps the hits (<= 0: historywire.DefaultLimit; at most
	// historywire.MaxLimit).
	Limit int
}

// Search returns the entries of q's targets matching q: by BM25 relevance,
// best first (equal scores newest first), when q.Text is set; newest first
// otherwise. Entries committed
// but not yet indexed (the indexer runs behind commits by a batch, and a
// rebuild after Open takes a while) are not found yet. A malformed q.Text is
// a *QueryError.
func (x *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	if x.closed.Load() {
		return nil, ErrClosed
	}
	bq, err := q.bleveQuery()
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = historywire.DefaultLimit
	}
	limit = min(limit, historywire.MaxLimit)
	req := bleve.NewSearchRequestOptions(bq, limit, 0, false)
	req.Fields = []string{fieldConv}
	if strings.TrimSpace(q.Text) == "" {
		req.SortBy([]string{"-" + fieldTime, "-_id"})
	}
	res, err := x.ix.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("history: search: %w", err)
	}
	hits, err := x.hits(ctx, res, q.Text)
	if err != nil {
		return nil, err
	}
	// Equal scores (common for short entries) come newest first, so a
	// rebuilt index (other internal document order) answers identically.
	slices.SortStableFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(a.ConversationUID, b.ConversationUID), cmp.Compare(b.Cursor, a.Cursor))
	})
	return hits, nil
}

// hitReaders bounds the concurrent side-table reads of one search's hits.
const hitReaders = 4

// hits reads the entries of the search's hits from the side table,
// concurrently (each read is a separate point lookup).
func (x *Index) hits(ctx context.Context, res *bleve.SearchResult, text string) ([]Hit, error) {
	out := make([]Hit, len(res.Hits))
	found := make([]bool, len(res.Hits))
	errs := make([]error, len(res.Hits))
	next := make(chan int, len(res.Hits))
	for i := range res.Hits {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(hitReaders, len(res.Hits)) {
		wg.Go(func() {
			for i := range next {
				h := res.Hits[i]
				out[i], found[i], errs[i] = x.hit(ctx, h.ID, h.Fields[fieldConv], text)
				if text != "" {
					out[i].Score = h.Score
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	hits := out[:0]
	for i, h := range out {
		if found[i] { // an entry gone since the search ran is skipped
			hits = append(hits, h)
		}
	}
	return hits, nil
}

// bleveQuery is the conjunction of the targets, the text, the speaker and
// the time bound.
func (q Query) bleveQuery() (query.Query, error) {
	if q.Namespace == "" {
		return nil, fmt.Errorf("history: namespace is required: %w", ErrInvalidQuery)
	}
	if len(q.Targets) == 0 {
		return nil, fmt.Errorf("history: at least one target is required: %w", ErrInvalidQuery)
	}
	targets := make([]query.Query, 0, len(q.Targets))
	for _, t := range q.Targets {
		if t.Agent == "" || strings.Contains(t.Agent, "/") || strings.Contains(t.Conversation, "/") {
			return nil, fmt.Errorf("history: target %+v: %w", t, ErrInvalidQuery)
		}
		agent := q.Namespace + "/" + t.Agent
		tq := bleve.NewTermQuery(agent)
		tq.SetField(fieldAgent)
		if t.Conversation != "" {
			tq = bleve.NewTermQuery(agent + "/" + t.Conversation)
			tq.SetField(fieldConv)
		}
		targets = append(targets, tq)
	}
	parts := []query.Query{bleve.NewDisjunctionQuery(targets...)}
	if strings.TrimSpace(q.Text) != "" {
		tq, err := textsearch.Parse(q.Text)
		if err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		parts = append(parts, tq)
	}
	if q.Speaker != "" {
		sq := bleve.NewTermQuery(q.Speaker)
		sq.SetField(fieldSpeaker)
		parts = append(parts, sq)
	}
	if !q.Since.IsZero() {
		inclusive := true
		rq := bleve.NewDateRangeInclusiveQuery(q.Since, time.Time{}, &inclusive, nil)
		rq.SetField(fieldTime)
		parts = append(parts, rq)
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return bleve.NewConjunctionQuery(parts...), nil
}

// hit builds the Hit of document id from its stored names and its entry in
// the side table; ok is false when the entry is gone.
func (x *Index) hit(ctx context.Context, id string, conv any, text string) (Hit, bool, error) {
	uid, hexCursor, ok1 := strings.Cut(id, "/")
	cursor, err := strconv.ParseInt(hexCursor, 16, 64)
	names, _ := conv.(string)
	parts := strings.SplitN(names, "/", 3)
	if !ok1 || err != nil || len(parts) != 3 {
		return Hit{}, false, fmt.Errorf("history: malformed index document %q (%q)", id, names)
	}
	kvs, err := x.st.ScanKV(ctx, transcript.Bucket, id, "", 1)
	if err != nil {
		return Hit{}, false, fmt.Errorf("history: read entry %s: %w", id, err)
	}
	if len(kvs) == 0 || kvs[0].Key != id {
		return Hit{}, false, nil
	}
	e, err := transcript.DecodeEntry(kvs[0].Value)
	if err != nil {
		return Hit{}, false, fmt.Errorf("history: entry %s: %w", id, err)
	}
	return Hit{Namespace: parts[0], Agent: parts[1], Conversation: parts[2], ConversationUID: uid, Cursor: cursor,
		Speaker: e.Speaker, Time: e.Time, Snippet: textsearch.Snippet(e.Text, text)}, true, nil
}
