package recall

import (
	"context"
	"reflect"

	"github.com/blevesearch/bleve/v2/mapping"
	bsearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"
	index "github.com/blevesearch/bleve_index_api"
)

// The index has no _all field (copying every token into it cost a quarter
// of indexing time), so a query term without a field searches title, tags
// and body instead: expandFields rewrites each such leaf of a parsed query
// string into an anyField over those fields.

var (
	allFields    = []string{fieldTitle, fieldTags, fieldBody}
	phraseFields = []string{fieldTitle, fieldBody} // the fields with positions
)

// expandFields rewrites q in place (the tree query.QueryStringQuery.Parse
// returns) and returns it.
func expandFields(q query.Query) query.Query {
	switch q := q.(type) {
	case *query.BooleanQuery:
		q.Must = expandFields(q.Must)
		q.Should = expandFields(q.Should)
		q.MustNot = expandFields(q.MustNot)
		return q
	case *query.ConjunctionQuery:
		for i, c := range q.Conjuncts {
			q.Conjuncts[i] = expandFields(c)
		}
		return q
	case *query.DisjunctionQuery:
		for i, c := range q.Disjuncts {
			q.Disjuncts[i] = expandFields(c)
		}
		return q
	case query.FieldableQuery:
		if q.Field() != "" {
			return q
		}
		fields := allFields
		switch q.(type) {
		case *query.MatchPhraseQuery, *query.PhraseQuery:
			fields = phraseFields
		}
		out := make(anyField, len(fields))
		for i, f := range fields {
			out[i] = withField(q, f)
		}
		return out
	}
	return q
}

// withField returns a copy of q searching field f.
func withField(q query.FieldableQuery, f string) query.Query {
	v := reflect.ValueOf(q)
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	fq := c.Interface().(query.FieldableQuery)
	fq.SetField(f)
	return fq
}

// anyField matches what any of its queries (one per field) matches, scored
// as their sum. Unlike a plain DisjunctionQuery it is a match-none searcher
// when every field's is (a stop word such as "the"), so that a query string's
// conjunction skips it the way it skipped the term on _all.
type anyField []query.Query

func (a anyField) Searcher(ctx context.Context, i index.IndexReader, m mapping.IndexMapping,
	options bsearch.SearcherOptions) (bsearch.Searcher, error) {
	ss := make([]bsearch.Searcher, 0, len(a))
	closeAll := func() {
		for _, s := range ss {
			_ = s.Close()
		}
	}
	for _, q := range a {
		s, err := q.Searcher(ctx, i, m, options)
		if err != nil {
			closeAll()
			return nil, err
		}
		if _, none := s.(*searcher.MatchNoneSearcher); none {
			_ = s.Close()
			continue
		}
		ss = append(ss, s)
	}
	if len(ss) == 0 {
		return searcher.NewMatchNoneSearcher(i)
	}
	return searcher.NewDisjunctionSearcher(ctx, i, ss, 0, options)
}
