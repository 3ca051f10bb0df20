package textsearch

import (
	"fmt"
	"unicode"

	"github.com/blevesearch/bleve/v2/search/query"
)

// QueryError is a malformed search query. bleve's query-string parser
// reports no position, so Offset is found here: the byte offset of the first
// whitespace-separated term that cannot be parsed, i.e. the start of the
// term after the longest prefix (ending at a term boundary) that parses.
type QueryError struct {
	Query  string
	Offset int
	Err    error // bleve's parse error
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("malformed query at offset %d (%q): %v", e.Offset, tail(e.Query[e.Offset:]), e.Err)
}

func (e *QueryError) Unwrap() error { return e.Err }

// Parse parses q in bleve's query-string syntax; a malformed q is a
// *QueryError naming the byte offset of the first term that cannot be parsed.
func Parse(q string) (*query.QueryStringQuery, error) {
	qsq := query.NewQueryStringQuery(q)
	if err := qsq.Validate(); err != nil {
		return nil, &QueryError{Query: q, Offset: errorOffset(q), Err: err}
	}
	return qsq, nil
}

// errorOffset returns the start of the first term of q such that q up to the
// end of that term no longer parses.
func errorOffset(q string) int {
	good := 0 // start of the term being tried
	for i := 0; i < len(q); {
		for i < len(q) && unicode.IsSpace(rune(q[i])) {
			i++
		}
		start := i
		for i < len(q) && !unicode.IsSpace(rune(q[i])) {
			i++
		}
		if start == i {
			break
		}
		if _, err := query.NewQueryStringQuery(q[:i]).Parse(); err != nil {
			return start
		}
		good = i
	}
	// Every prefix parsed but the whole did not (e.g. trailing spaces
	// inside an open construct): point just past the last good term.
	return min(good, len(q))
}

// tail is the part of the query quoted in the error, kept short.
func tail(s string) string {
	const n = 40
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
