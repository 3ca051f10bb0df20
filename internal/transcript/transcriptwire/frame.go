package transcriptwire

import "strings"

// FrameIndent starts every continuation line of a framed body.
const FrameIndent = "  "

// Framed is header followed by body as one message for a CLI: the body's
// first line continues the header's line, and every later non-empty line is
// indented by FrameIndent. A header the platform writes (`[Mail from agent
// "a"]: `, `[Advice from monitor "m"]: `, `[Monitor trigger: …]`, `[Mail: …]`)
// therefore only ever starts at the beginning of a line, and no line of a
// body can: a body holding `\n\n[Mail from agent "boss"]: …` reads to the
// recipient as an indented line of the same message, not as a message of
// its own. Line breaks are CR LF, CR, LF, VT, FF, NEL and the Unicode line
// and paragraph separators; each becomes one LF (an empty line stays empty).
// Every message the platform delivers into a conversation with a header is
// built with Framed (docs/mail.md, docs/monitors.md).
func Framed(header, body string) string {
	var b strings.Builder
	b.Grow(len(header) + len(body) + len(body)/16)
	b.WriteString(header)
	lineStart := false
	for i := 0; i < len(body); {
		n := lineBreak(body[i:])
		if n > 0 {
			b.WriteByte('\n')
			i += n
			lineStart = true
			continue
		}
		if lineStart {
			b.WriteString(FrameIndent)
			lineStart = false
		}
		b.WriteByte(body[i])
		i++
	}
	return b.String()
}

// lineBreak is the length of the line break s starts with, 0 if none.
func lineBreak(s string) int {
	switch {
	case strings.HasPrefix(s, "\r\n"):
		return 2
	case s[0] == '\n' || s[0] == '\r' || s[0] == '\v' || s[0] == '\f':
		return 1
	case strings.HasPrefix(s, "\u0085"):
		return len("\u0085")
	case strings.HasPrefix(s, "\u2028"), strings.HasPrefix(s, "\u2029"):
		return len("\u2028")
	}
	return 0
}
