package recall

import (
	"fmt"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/registry"
)

// analyzerName is bleve's English analyzer (possessives, lower case, stop
// words, Porter stemming) over wordsTokenizer instead of the unicode one.
const (
	analyzerName  = "recall_en"
	tokenizerName = "recall_words"
)

func init() {
	registry.RegisterTokenizer(tokenizerName, func(map[string]any, *registry.Cache) (analysis.Tokenizer, error) {
		return wordsTokenizer{unicode: unicode.NewUnicodeTokenizer()}, nil
	})
	registry.RegisterAnalyzer(analyzerName, func(_ map[string]any, c *registry.Cache) (analysis.Analyzer, error) {
		tok, err := c.TokenizerNamed(tokenizerName)
		if err != nil {
			return nil, err
		}
		var filters []analysis.TokenFilter
		for _, name := range []string{en.PossessiveName, lowercase.Name, en.StopName, porter.Name} {
			f, err := c.TokenFilterNamed(name)
			if err != nil {
				return nil, fmt.Errorf("recall analyzer: %w", err)
			}
			filters = append(filters, f)
		}
		return &analysis.DefaultAnalyzer{Tokenizer: tok, TokenFilters: filters}, nil
	})
}

// wordsTokenizer splits text into words exactly as bleve's unicode
// tokenizer (Unicode UAX #29 word boundaries) does, with a fast path for
// ASCII text: the segmenter's state machine was an eighth of indexing time.
// Input with any non-ASCII byte goes to the unicode tokenizer.
type wordsTokenizer struct{ unicode analysis.Tokenizer }

// ASCII word-break classes (UAX #29).
const (
	wbOther byte = iota
	wbLetter
	wbDigit
	wbExtendNumLet // _
	wbMidLetter    // :
	wbMidNumLet    // . and ' (Single_Quote acts the same on ASCII)
	wbMidNum       // , ;
)

var wbClass = func() (t [128]byte) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = wbLetter, wbLetter
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = wbDigit
	}
	t['_'], t[':'], t['.'], t['\''], t[','], t[';'] = wbExtendNumLet, wbMidLetter, wbMidNumLet, wbMidNumLet, wbMidNum, wbMidNum
	return t
}()

func (t wordsTokenizer) Tokenize(in []byte) analysis.TokenStream {
	for _, c := range in {
		if c >= 0x80 {
			return t.unicode.Tokenize(in)
		}
	}
	out := make(analysis.TokenStream, 0, len(in)/6+1)
	toks := make([]analysis.Token, 0, len(in)/6+1)
	pos := 1
	for i := 0; i < len(in); {
		c := wbClass[in[i]]
		if c != wbLetter && c != wbDigit && c != wbExtendNumLet {
			i++
			continue
		}
		start, digit, letter := i, c == wbDigit, c == wbLetter
		for i++; i < len(in); i++ {
			prev, cur := wbClass[in[i-1]], wbClass[in[i]]
			if joins(prev, cur) {
				digit, letter = digit || cur == wbDigit, letter || cur == wbLetter
				continue
			}
			// WB6/7, WB11/12: letter (mid) letter, digit (mid) digit.
			if i+1 < len(in) && isMid(cur) {
				next := wbClass[in[i+1]]
				if (prev == wbLetter && next == wbLetter && cur != wbMidNum) ||
					(prev == wbDigit && next == wbDigit && cur != wbMidLetter) {
					i++
					continue
				}
			}
			break
		}
		typ := analysis.AlphaNumeric // the segmenter's Number: digits, no letter
		if digit && !letter {
			typ = analysis.Numeric
		}
		toks = append(toks, analysis.Token{Term: in[start:i], Start: start, End: i, Position: pos, Type: typ})
		pos++
	}
	for i := range toks {
		out = append(out, &toks[i])
	}
	return out
}

// joins reports whether no word boundary falls between adjacent classes a
// and b (WB5, WB8–10, WB13a/b).
func joins(a, b byte) bool {
	word := func(c byte) bool { return c == wbLetter || c == wbDigit }
	return (word(a) && word(b)) || (b == wbExtendNumLet && (word(a) || a == wbExtendNumLet)) ||
		(a == wbExtendNumLet && word(b))
}

func isMid(c byte) bool { return c == wbMidLetter || c == wbMidNumLet || c == wbMidNum }
