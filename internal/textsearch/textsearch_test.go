package textsearch

import (
	"errors"
	"testing"
)

func TestParseNamesTheOffset(t *testing.T) {
	for _, tc := range []struct {
		q      string
		offset int
	}{
		{`flaky "deploy script`, 6},
		{`flaky deploy body:`, 13},
		{`+`, 0},
	} {
		_, err := Parse(tc.q)
		var qe *QueryError
		if !errors.As(err, &qe) || qe.Offset != tc.offset {
			t.Errorf("%q: %v, want a QueryError at offset %d", tc.q, err, tc.offset)
		}
	}
	if _, err := Parse(`+deploy -staging "flaky test" text:keys`); err != nil {
		t.Fatal(err)
	}
}

func TestSnippetMarksTheFirstQueryWord(t *testing.T) {
	if got := Snippet("the deploy script was racing", "deploying"); got != "the **deploy** script was racing" {
		t.Fatalf("snippet %q", got)
	}
	if got := Snippet("nothing here", "absent"); got != "nothing here" {
		t.Fatalf("snippet without a match %q", got)
	}
}
