package match

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"aicli.dev/aicli/apis/v1alpha1"
)

// unit is one rune of the text (or one byte that is not valid UTF-8) with its
// lowered bytes.
type unit struct {
	off, end int
	r        rune
	low      string
}

func units(text string, caseSensitive bool) []unit {
	var us []unit
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		low := text[i : i+n]
		if !caseSensitive && !(r == utf8.RuneError && n == 1) {
			low = string(unicode.ToLower(r))
		}
		us = append(us, unit{off: i, end: i + n, r: r, low: low})
		i += n
	}
	return us
}

// naiveMatch is the reference: at every rune of the text, for every keyword in
// spec order, lower the following runes one by one and compare.
func naiveMatch(tr v1alpha1.TriggerSpec, text string) []Hit {
	us := units(text, tr.CaseSensitive)
	wordChar := func(k int) bool {
		if k < 0 || k >= len(us) {
			return false
		}
		r := us[k].r
		return unicode.IsLetter(r) || unicode.IsDigit(r)
	}
	type span struct{ start, end int }
	var hits []Hit
	for s := range us {
		taken := map[span]bool{} // one hit per span: the first keyword that fires there
		// Substring keywords win over Word ones with the same text.
		for _, pass := range []v1alpha1.MatchMode{v1alpha1.MatchSubstring, v1alpha1.MatchWord} {
			for _, k := range tr.Keywords {
				if modeOf(k) != pass {
					continue
				}
				want := k.Text
				if !tr.CaseSensitive {
					want = strings.ToLower(want)
				}
				var got strings.Builder
				e := s
				for e < len(us) && got.Len() < len(want) {
					got.WriteString(us[e].low)
					e++
				}
				if got.String() != want {
					continue
				}
				sp := span{us[s].off, us[e-1].end}
				if taken[sp] {
					continue
				}
				if pass == v1alpha1.MatchWord && (wordChar(s-1) || wordChar(e)) {
					continue
				}
				taken[sp] = true
				hits = append(hits, Hit{Keyword: k.Text, Start: sp.start, End: sp.end})
			}
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.End, b.End)
	})
	return hits
}

// pieces are what random texts and keywords are made of: letters in both
// cases, runes whose lowering changes their length (İ, ẞ, Kelvin sign, Ⱥ),
// digits, separators, and (texts only) bytes that are not UTF-8.
var (
	keywordPieces = []string{"a", "b", "A", "B", "é", "É", "i", "İ", "ı", "ß", "ẞ", "k", "\u212A", "ⱥ", "Ⱥ", "1", "٣", "-", "_", " ", ":"}
	textPieces    = append(slices.Clone(keywordPieces), "\xff", "\xc3", "\xe2\x82", "\n")
)

func randString(r *rand.Rand, pieces []string, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func TestMatchAgainstNaiveReference(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 25))
	compiled, hits, shifted := 0, 0, 0
	for iter := range 4000 {
		tr := v1alpha1.TriggerSpec{CaseSensitive: r.IntN(3) == 0}
		for range 1 + r.IntN(6) {
			k := v1alpha1.Keyword{Text: randString(r, keywordPieces, 1+r.IntN(4))}
			switch r.IntN(3) {
			case 0:
				k.Mode = v1alpha1.MatchWord
			case 1:
				k.Mode = v1alpha1.MatchSubstring
			}
			tr.Keywords = append(tr.Keywords, k)
		}
		m, err := Compile(tr)
		if err != nil {
			if len(Validate(tr)) == 0 {
				t.Fatalf("Compile failed on a valid trigger %+v: %v", tr, err)
			}
			continue
		}
		compiled++
		for range 5 {
			text := randString(r, textPieces, r.IntN(60))
			got, want := m.Match(text), naiveMatch(tr, text)
			if !slices.Equal(got, want) {
				t.Fatalf("iteration %d: trigger %+v\ntext %q\ngot  %v\nwant %v", iter, tr, text, got, want)
			}
			hits += len(want)
			for _, h := range want {
				if h.End-h.Start != len(strings.ToLower(text[h.Start:h.End])) {
					shifted++
				}
			}
		}
	}
	t.Logf("%d triggers compiled, %d hits compared, %d of them where lowering changed the length", compiled, hits, shifted)
	if compiled < 2000 || hits < 10000 || shifted < 100 {
		t.Errorf("too little was compared")
	}
}
