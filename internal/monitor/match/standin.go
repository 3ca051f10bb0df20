// Package match compiles a monitor's trigger and finds its keywords in
// transcript text.
//
// This file is a minimal stand-in with the package's API (strings.Index over
// case-folded text); the real matcher replaces it.
package match

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"aicli.dev/aicli/apis/v1alpha1"
)

// Hit is one keyword occurrence: text[Start:End].
type Hit struct {
	Keyword    string
	Start, End int
}

// Matcher is a compiled trigger.
type Matcher struct {
	keywords []v1alpha1.Keyword
	folded   []string
	caseSens bool
	speakers []string
}

// Compile compiles a trigger (Validate's errors as one error).
func Compile(t v1alpha1.TriggerSpec) (*Matcher, error) {
	if errs := Validate(t); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	m := &Matcher{keywords: t.Keywords, caseSens: t.CaseSensitive, speakers: t.Speakers}
	for _, k := range t.Keywords {
		m.folded = append(m.folded, m.fold(k.Text))
	}
	return m, nil
}

func (m *Matcher) fold(s string) string {
	if m.caseSens {
		return s
	}
	return strings.ToLower(s)
}

// Match returns every keyword occurrence in text, in order of position.
func (m *Matcher) Match(text string) []Hit {
	hay := m.fold(text)
	if len(hay) != len(text) { // folding changed byte lengths: positions are approximate
		hay = text
	}
	var hits []Hit
	for i, k := range m.folded {
		for off := 0; off <= len(hay); {
			j := strings.Index(hay[off:], k)
			if j < 0 {
				break
			}
			s, e := off+j, off+j+len(k)
			if m.keywords[i].Mode != v1alpha1.MatchWord || boundary(hay, s, e) {
				hits = append(hits, Hit{Keyword: m.keywords[i].Text, Start: s, End: e})
			}
			off = s + max(1, len(k))
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int { return a.Start - b.Start })
	return hits
}

func boundary(s string, start, end int) bool {
	if start > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:start])
		if isWord(r) {
			return false
		}
	}
	if end < len(s) {
		r, _ := utf8.DecodeRuneInString(s[end:])
		if isWord(r) {
			return false
		}
	}
	return true
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// Speaks reports whether entries of speaker are matched (the speaker filter).
func (m *Matcher) Speaks(speaker string) bool {
	return len(m.speakers) == 0 || slices.Contains(m.speakers, speaker)
}

// Excerpt is the text around hit, at most radius bytes on each side.
func Excerpt(text string, hit Hit, radius int) string {
	s, e := max(0, hit.Start-radius), min(len(text), hit.End+radius)
	for s > 0 && !utf8.RuneStart(text[s]) {
		s--
	}
	for e < len(text) && !utf8.RuneStart(text[e]) {
		e++
	}
	out := text[s:e]
	if s > 0 {
		out = "…" + out
	}
	if e < len(text) {
		out += "…"
	}
	return out
}

// Validate checks a trigger: at least one keyword, none empty.
func Validate(t v1alpha1.TriggerSpec) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec", "trigger", "keywords")
	if len(t.Keywords) == 0 {
		errs = append(errs, field.Required(p, "at least one keyword"))
	}
	for i, k := range t.Keywords {
		if strings.TrimSpace(k.Text) == "" {
			errs = append(errs, field.Required(p.Index(i).Child("text"), "a keyword must not be empty"))
		}
		if k.Mode != "" && k.Mode != v1alpha1.MatchSubstring && k.Mode != v1alpha1.MatchWord {
			errs = append(errs, field.NotSupported(p.Index(i).Child("mode"), k.Mode, []string{string(v1alpha1.MatchSubstring), string(v1alpha1.MatchWord)}))
		}
	}
	return errs
}
