package ptyapi

import "strings"

// SanitizeMessage is what a CLI receives of a SendMessage text: the
// bracketed paste start and end markers removed, and every control character
// except newline and tab; CR LF and a lone CR become a newline. A message can
// therefore never end the paste early and be typed as keystrokes. The guest
// pastes this form (harness.SanitizePaste), and the supervisor compares sent
// texts with recorded user turns in it (transcript.Attribution).
func SanitizeMessage(text string) string {
	text = strings.ReplaceAll(text, "\x1b[200~", "")
	text = strings.ReplaceAll(text, "\x1b[201~", "")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\r':
			return '\n'
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return -1
		}
		return r
	}, text)
}
