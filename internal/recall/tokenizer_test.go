package recall

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
)

// The ASCII fast path must split exactly as the unicode tokenizer does.
func TestWordsTokenizerMatchesUnicode(t *testing.T) {
	fast, ref := wordsTokenizer{unicode: unicode.NewUnicodeTokenizer()}, unicode.NewUnicodeTokenizer()
	inputs := []string{
		"", "a", "The deploy runs at noon.", "don't stop", "she's here's", "3.14 and 1,000,000; 2;3",
		"v2.6.3 e-mail foo_bar __init__ _x x_ a:b a::b :a a: 1:2 a.b. .a 'quote' a'b'c 1'2 a1.b2 1.a a.1",
		"http://example.com/a?b=c#d user@example.com C++ x86_64 $100 50% #tag @user",
		"tab\tnew\nline\r\nend", "...", "__", "_", "a__b", "1__2", "a_1", "1_a", "a,b", "a;b", "1.2.3", "1..2",
		"naïve café", // non-ASCII: delegated
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab1 _:.',;-x9Z!\t"
	for range 5000 {
		var b strings.Builder
		for range 1 + rng.IntN(20) {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		inputs = append(inputs, b.String())
	}
	for _, d := range benchDocs(50, 3) {
		inputs = append(inputs, d.Body)
	}
	for _, in := range inputs {
		if got, want := render(fast.Tokenize([]byte(in))), render(ref.Tokenize([]byte(in))); got != want {
			t.Fatalf("%q:\n got %s\nwant %s", in, got, want)
		}
	}
}

func render(ts analysis.TokenStream) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "[%s %d-%d @%d t%d]", t.Term, t.Start, t.End, t.Position, t.Type)
	}
	return b.String()
}
