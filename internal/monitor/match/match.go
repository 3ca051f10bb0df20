package match

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/coregx/ahocorasick"

	"aicli.dev/aicli/apis/v1alpha1"
)

// Hit is one keyword occurrence: text[Start:End] is the matched text, in byte
// offsets into the string given to Match (not into a case-folded copy).
type Hit struct {
	// Keyword is the keyword's text as written in the trigger.
	Keyword string
	// Start and End delimit the occurrence, End exclusive.
	Start, End int
}

// pattern is one distinct folded keyword text in the automaton and the
// keywords that share it (same folded text, different modes).
type pattern struct {
	// substring is the first Substring keyword with this text, or "".
	substring string
	// word is the first Word keyword with this text, or "".
	word string
}

// Matcher is a compiled trigger. It is immutable and safe for concurrent use.
type Matcher struct {
	ac            *ahocorasick.Automaton
	patterns      []pattern
	caseSensitive bool
	speakers      []string
	bufs          sync.Pool // *folded
}

// Compile validates the trigger (the same rules as Validate; the error names
// the first offending field, e.g. "spec.trigger.keywords[2].text: Required
// value: empty") and builds its automaton.
//
// Matching rules:
//   - Case: unless t.CaseSensitive, keyword and text are compared after
//     lowering both rune by rune with unicode.ToLower — the mapping of
//     strings.ToLower (simple lowercase, no special casing, no full case
//     folding: "ß" does not match "ss", final "ς" does not match "σ").
//     Offsets still refer to the original text when lowering changes a rune's
//     byte length ("İ" → "i").
//   - Substring: the keyword matches anywhere, also inside a longer word.
//   - Word: the keyword matches only where the character just before the
//     occurrence and the character just after it are each either absent (an
//     edge of the text given to Match) or not alphanumeric, where alphanumeric
//     means unicode.IsLetter or unicode.IsDigit. So "panic" fires in
//     "kernel panic:", "(panic)", "panic_handler" ("_" is not alphanumeric,
//     unlike regexp's ASCII \w), but not in "panicked" or "antipanic". The
//     rule looks outside the occurrence only: a Word keyword "panic:" does not
//     fire in "panic:x". Invalid UTF-8 next to an occurrence is a boundary.
//
// Keywords with the same folded text and different modes are one pattern: an
// occurrence is reported once, as the Substring keyword when there is one.
func Compile(t v1alpha1.TriggerSpec) (*Matcher, error) {
	if errs := Validate(t); len(errs) > 0 {
		return nil, errs[0]
	}
	m := &Matcher{
		caseSensitive: t.CaseSensitive,
		speakers:      slices.Clone(t.Speakers),
	}
	m.bufs.New = func() any { return new(folded) }
	index := make(map[string]int, len(t.Keywords))
	var texts [][]byte
	for _, k := range t.Keywords {
		text := foldKeyword(k.Text, t.CaseSensitive)
		i, ok := index[text]
		if !ok {
			i = len(m.patterns)
			index[text] = i
			m.patterns = append(m.patterns, pattern{})
			texts = append(texts, []byte(text))
		}
		p := &m.patterns[i]
		switch modeOf(k) {
		case v1alpha1.MatchWord:
			if p.word == "" {
				p.word = k.Text
			}
		default:
			if p.substring == "" {
				p.substring = k.Text
			}
		}
	}
	ac, err := ahocorasick.NewBuilder().AddPatterns(texts).Build()
	if err != nil {
		return nil, fmt.Errorf("compile %d keywords: %w", len(texts), err)
	}
	m.ac = ac
	return m, nil
}

// Match returns every keyword occurrence in text, overlapping ones included
// ("dead" and "deadlock" both fire in "deadlock"), sorted by Start, then End
// (no two hits share both: one span holds one folded text). Its cost is linear in len(text) plus the number of
// occurrences: the automaton reads each byte once, whatever the number of
// keywords, and case folding is one more pass over the text.
func (m *Matcher) Match(text string) []Hit {
	if text == "" {
		return nil
	}
	var (
		hay []byte
		f   *folded
	)
	if m.caseSensitive {
		// The automaton only reads the haystack.
		hay = unsafe.Slice(unsafe.StringData(text), len(text))
	} else {
		f = m.bufs.Get().(*folded)
		defer m.bufs.Put(f)
		f.fold(text)
		hay = f.buf
	}
	found := m.ac.FindAllOverlapping(hay)
	if len(found) == 0 {
		return nil
	}
	hits := make([]Hit, 0, len(found))
	for _, x := range found {
		start, end := x.Start, x.End
		if f != nil {
			start, end = f.orig(start), f.orig(end)
		}
		p := &m.patterns[x.PatternID]
		switch {
		case p.substring != "":
			hits = append(hits, Hit{Keyword: p.substring, Start: start, End: end})
		case isWord(text, start, end):
			hits = append(hits, Hit{Keyword: p.word, Start: start, End: end})
		}
	}
	// The automaton reports by End; sorting by Start is cheap on this nearly
	// sorted input.
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.End, b.End)
	})
	return hits
}

// isWord reports whether text[start:end] has a boundary at each end.
func isWord(text string, start, end int) bool {
	if start > 0 {
		r, _ := utf8.DecodeLastRuneInString(text[:start])
		if alnum(r) {
			return false
		}
	}
	if end < len(text) {
		r, _ := utf8.DecodeRuneInString(text[end:])
		if alnum(r) {
			return false
		}
	}
	return true
}

// alnum is the Word rule's notion of a word character.
func alnum(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// Speaks reports whether the trigger evaluates text of this speaker: every
// speaker when the trigger lists none, otherwise exactly the listed names
// ("injected:*" or "mail:*" are names like any other, not patterns).
func (m *Matcher) Speaks(speaker string) bool {
	return len(m.speakers) == 0 || slices.Contains(m.speakers, speaker)
}
