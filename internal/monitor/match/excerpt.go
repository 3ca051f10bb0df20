package match

import "unicode/utf8"

// Ellipsis marks an excerpt cut short of the text's start or end.
const Ellipsis = "…"

// Excerpt returns the text around a hit: up to radius bytes before h.Start
// and after h.End, each cut moved inwards to a UTF-8 rune boundary so no rune
// is split, with Ellipsis at a side where the text goes on. A hit outside
// the text is clamped to it; a negative radius is 0.
func Excerpt(text string, h Hit, radius int) string {
	radius = max(radius, 0)
	start := min(max(h.Start, 0), len(text))
	end := min(max(h.End, start), len(text))
	from := max(start-radius, 0)
	for from < start && !utf8.RuneStart(text[from]) {
		from++
	}
	to := min(end+radius, len(text))
	for to > end && to < len(text) && !utf8.RuneStart(text[to]) {
		to--
	}
	out := text[from:to]
	if from > 0 {
		out = Ellipsis + out
	}
	if to < len(text) {
		out += Ellipsis
	}
	return out
}
