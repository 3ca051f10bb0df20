package recall

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

func seed(t *testing.T, r *Recall) {
	t.Helper()
	for _, d := range []Doc{
		{ID: "run", Title: "Morning routine", Body: "She runs along the river every morning before work."},
		{ID: "db", Title: "Database notes", Body: "The database migration failed because the disk was full."},
		{ID: "phrase", Title: "Release", Body: "The release train leaves on Friday; the train is never late."},
		{ID: "split", Title: "Mixed", Body: "Release notes mention a train of thought about the weekend."},
		{ID: "cats", Title: "Cats", Tags: []string{"pets"}, Body: "Cats sleep most of the day. Cats cats cats."},
		{ID: "onecat", Title: "Garden", Body: "A cat crossed the garden while we discussed tomatoes, peppers and beans at length."},
	} {
		mustPut(t, r, d)
	}
}

func search(t *testing.T, r *Recall, q string) []Hit {
	t.Helper()
	hits, err := r.Search(context.Background(), testRef, q, 10)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	return hits
}

func TestSearchStemming(t *testing.T) {
	r := newEnv(t).open(t)
	seed(t, r)
	if got := ids(search(t, r, "running")); !slices.Equal(got, []string{"run"}) {
		t.Fatalf("running: %v", got)
	}
	if got := ids(search(t, r, "migrations")); !slices.Equal(got, []string{"db"}) {
		t.Fatalf("migrations: %v", got)
	}
}

func TestSearchPhraseAndOperators(t *testing.T) {
	r := newEnv(t).open(t)
	seed(t, r)
	if got := ids(search(t, r, `"release train"`)); !slices.Equal(got, []string{"phrase"}) {
		t.Fatalf("phrase: %v", got)
	}
	if got := ids(search(t, r, `+release -friday`)); !slices.Equal(got, []string{"split"}) {
		t.Fatalf("+release -friday: %v", got)
	}
	if got := ids(search(t, r, `tags:pets`)); !slices.Equal(got, []string{"cats"}) {
		t.Fatalf("tags:pets: %v", got)
	}
	if got := ids(search(t, r, `title:database`)); !slices.Equal(got, []string{"db"}) {
		t.Fatalf("title:database: %v", got)
	}
}

func TestSearchRankingAndSnippet(t *testing.T) {
	r := newEnv(t).open(t)
	seed(t, r)
	hits := search(t, r, "cat")
	if got := ids(hits); !slices.Equal(got, []string{"cats", "onecat"}) {
		t.Fatalf("cat: %v, want the cat-heavy short doc first", got)
	}
	if hits[0].Score <= hits[1].Score || hits[0].Title != "Cats" {
		t.Fatalf("hits: %+v", hits)
	}
	if !strings.Contains(hits[1].Snippet, "**cat**") {
		t.Fatalf("snippet %q does not mark the term", hits[1].Snippet)
	}
}

func TestSearchMalformedQuery(t *testing.T) {
	r := newEnv(t).open(t)
	seed(t, r)
	for _, tc := range []struct {
		q      string
		offset int
	}{
		{`cats "unclosed phrase`, 5},
		{`cats title:`, 5},
		{`+`, 0},
	} {
		_, err := r.Search(context.Background(), testRef, tc.q, 10)
		var qe *QueryError
		if !errors.As(err, &qe) {
			t.Fatalf("%q: err = %v, want *QueryError", tc.q, err)
		}
		if qe.Offset != tc.offset || !strings.Contains(err.Error(), "offset") {
			t.Errorf("%q: offset %d, want %d (%v)", tc.q, qe.Offset, tc.offset, err)
		}
	}
}

func TestRebuildFromStore(t *testing.T) {
	e := newEnv(t)
	r := e.open(t)
	seed(t, r)
	queries := []string{"running", `"release train"`, "cat", "+release -friday"}
	before := map[string][]string{}
	for _, q := range queries {
		before[q] = ids(search(t, r, q))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(e.indexDir); err != nil {
		t.Fatal(err)
	}
	r = e.open(t)
	for _, q := range queries {
		if got := ids(search(t, r, q)); !slices.Equal(got, before[q]) {
			t.Errorf("%q after rebuild: %v, want %v", q, got, before[q])
		}
	}
}

func TestRebuildCorruptOrUnclean(t *testing.T) {
	e := newEnv(t)
	r := e.open(t)
	seed(t, r)
	want := ids(search(t, r, "cat"))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	path := r.bucketDir(testRef) + "/" + mappingVersion
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil { // corrupt: a file, not an index
		t.Fatal(err)
	}
	r = e.open(t)
	if got := ids(search(t, r, "cat")); !slices.Equal(got, want) {
		t.Fatalf("after corrupt index: %v, want %v", got, want)
	}

	// Unclean shutdown: a write reached the store but not the index; the
	// dirty marker left behind forces a rebuild that picks it up.
	val := []byte(`{"id":"late","body":"a cat arrived late"}`)
	if err := e.st.PutKV(context.Background(), kvBucket, testRef.key("late"), val); err != nil {
		t.Fatal(err)
	}
	b, _ := r.bucket(context.Background(), testRef)
	if err := b.idx.Load().ix.Close(); err != nil { // close bleve but keep the marker
		t.Fatal(err)
	}
	b.idx.Store(nil)
	r.mu.Lock()
	r.buckets = map[BucketRef]*bucketIndex{} // r's Close must not remove the marker
	r.mu.Unlock()
	r3 := e.open(t)
	if got := ids(search(t, r3, "cat")); !slices.Contains(got, "late") {
		t.Fatalf("after unclean shutdown: %v, want late included", got)
	}
}

// Without an _all field, a term without a field must still reach title,
// tags and body, and a stop word must not empty a conjunction.
func TestBareTermsSearchEveryField(t *testing.T) {
	r := newEnv(t).open(t)
	seed(t, r)
	for q, want := range map[string][]string{
		"routine":            {"run"},    // title only
		"pets":               {"cats"},   // tag only
		"tomatoes":           {"onecat"}, // body only
		"+the +database":     {"db"},     // "the" is a stop word
		`"morning routine"`:  {"run"},    // phrase in the title
		"+garden -tomatoes":  {},
		"databases routines": {"db", "run"},
	} {
		got := ids(search(t, r, q))
		slices.Sort(got)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%q: %v, want %v", q, got, want)
		}
	}
}
