package recall

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
	return fmt.Sprintf("recall: malformed query at offset %d (%q): %v", e.Offset, tail(e.Query[e.Offset:]), e.Err)
}

func (e *QueryError) Unwrap() error { return e.Err }

func newQueryError(q string, err error) *QueryError {
	return &QueryError{Query: q, Offset: errorOffset(q), Err: err}
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
