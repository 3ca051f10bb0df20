package textsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// SnippetBytes is about the length of a Snippet.
const SnippetBytes = 200

// Snippet cuts about SnippetBytes of body around the first word starting
// with the stem-ish prefix (first 4 letters) of a query word, marking that
// word with **; without a match it is the body's start.
func Snippet(body, q string) string {
	lower := strings.ToLower(body)
	at, end := -1, -1
	for _, w := range queryWords(q) {
		p := w
		if len(p) > 4 {
			p = p[:4]
		}
		for off := 0; off < len(lower); {
			i := strings.Index(lower[off:], p)
			if i < 0 {
				break
			}
			i += off
			if i == 0 || !isWordByte(lower[i-1]) {
				if at < 0 || i < at {
					at, end = i, wordEnd(lower, i)
				}
				break
			}
			off = i + 1
		}
	}
	if at < 0 {
		return cut(body, 0, SnippetBytes)
	}
	start := max(0, at-SnippetBytes/3)
	for start > 0 && !utf8.RuneStart(body[start]) {
		start--
	}
	s := cut(body, start, SnippetBytes)
	rel := at - start
	relEnd := min(end-start, len(strings.TrimSuffix(s, "…")))
	if relEnd <= rel {
		return s
	}
	return s[:rel] + "**" + s[rel:relEnd] + "**" + s[relEnd:]
}

// queryWords are the lower-cased plain words of a query (field names,
// operators and quotes dropped).
func queryWords(q string) []string {
	var out []string
	for _, f := range strings.Fields(strings.ToLower(q)) {
		if strings.HasPrefix(f, "-") {
			continue
		}
		if i := strings.IndexByte(f, ':'); i >= 0 {
			f = f[i+1:]
		}
		f = strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 0x80 || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
}

func wordEnd(s string, i int) int {
	for i < len(s) && isWordByte(s[i]) {
		i++
	}
	return i
}

// cut returns about n bytes of s from start, ending at a rune boundary,
// with "…" when it stops before the end.
func cut(s string, start, n int) string {
	end := start + n
	if end >= len(s) {
		return s[start:]
	}
	for end > start && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[start:end] + "…"
}
