package convapi

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// typedLine follows what a human types into an attached terminal, so that
// the user turn it produces can be attributed to them (human): every line
// submitted with Enter is announced to the transcript attribution before the
// Enter reaches the CLI. It models the line editing every CLI prompt shares:
// text and bracketed pastes insert at the cursor; Backspace, Delete, Ctrl-U,
// Ctrl-K, Ctrl-W, Ctrl-C edit or clear; Left, Right, Home, End, Ctrl-A/E/B/F
// move; Alt-Enter inserts a newline. An edit it cannot follow (history
// recall with Up/Down, Tab completion, other Alt or Ctrl keys on a non-empty
// line) marks the line unknown, and it is not announced: its turn reads
// "unattributed", never a guessed human text (docs/conversations.md).
type typedLine struct {
	buf     []rune
	cursor  int
	lost    bool
	state   int
	seq     []byte // the CSI or SS3 sequence being read
	paste   []byte
	partial []byte // an incomplete UTF-8 sequence at the end of a frame
}

const (
	typedNormal = iota
	typedEsc
	typedCSI
	typedSS3
	typedPaste
)

var pasteEnd = []byte("\x1b[201~")

// feed takes one frame of keystrokes and returns the lines it submitted.
func (t *typedLine) feed(b []byte) []string {
	var out []string
	if len(t.partial) > 0 {
		b = append(t.partial, b...)
		t.partial = nil
	}
	for i := 0; i < len(b); {
		c := b[i]
		switch t.state {
		case typedPaste:
			t.paste = append(t.paste, c)
			if len(t.paste) >= len(pasteEnd) && string(t.paste[len(t.paste)-len(pasteEnd):]) == string(pasteEnd) {
				text := string(t.paste[:len(t.paste)-len(pasteEnd)])
				text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
				t.insert([]rune(text)...)
				t.paste, t.state = nil, typedNormal
			}
			i++
			continue
		case typedEsc:
			i++
			switch c {
			case '[':
				t.state, t.seq = typedCSI, t.seq[:0]
			case 'O':
				t.state, t.seq = typedSS3, t.seq[:0]
			case '\r', '\n':
				t.state = typedNormal
				t.insert('\n') // Alt-Enter: a newline in the message
			default:
				t.state = typedNormal
				t.unknownEdit()
			}
			continue
		case typedCSI, typedSS3:
			i++
			t.seq = append(t.seq, c)
			if c >= 0x40 && c <= 0x7e {
				kind := t.state
				t.state = typedNormal
				t.sequence(kind, string(t.seq))
			}
			continue
		}
		switch {
		case c == 0x1b:
			t.state = typedEsc
		case c == '\r' || c == '\n':
			if line := string(t.buf); !t.lost && strings.TrimSpace(line) != "" {
				out = append(out, line)
			}
			t.reset()
		case c == 0x7f || c == 0x08: // Backspace
			if t.cursor > 0 {
				t.buf = append(t.buf[:t.cursor-1], t.buf[t.cursor:]...)
				t.cursor--
			}
		case c == 0x03: // Ctrl-C clears the prompt
			t.reset()
		case c == 0x15: // Ctrl-U: to the start
			t.buf = append(t.buf[:0], t.buf[t.cursor:]...)
			t.cursor = 0
		case c == 0x0b: // Ctrl-K: to the end
			t.buf = t.buf[:t.cursor]
		case c == 0x17: // Ctrl-W: the word before the cursor
			j := t.cursor
			for j > 0 && unicode.IsSpace(t.buf[j-1]) {
				j--
			}
			for j > 0 && !unicode.IsSpace(t.buf[j-1]) {
				j--
			}
			t.buf = append(t.buf[:j], t.buf[t.cursor:]...)
			t.cursor = j
		case c == 0x01: // Ctrl-A
			t.cursor = 0
		case c == 0x05: // Ctrl-E
			t.cursor = len(t.buf)
		case c == 0x02: // Ctrl-B
			t.cursor = max(t.cursor-1, 0)
		case c == 0x06: // Ctrl-F
			t.cursor = min(t.cursor+1, len(t.buf))
		case c == 0x04: // Ctrl-D: the character under the cursor
			t.deleteAt()
		case c == 0x0c: // Ctrl-L redraws
		case c < 0x20:
			t.unknownEdit()
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 && !utf8.FullRune(b[i:]) {
				t.partial = append([]byte(nil), b[i:]...)
				return out
			}
			t.insert(r)
			i += n
			continue
		}
		i++
	}
	if t.state == typedEsc {
		// A frame ending in ESC is the Escape key: it interrupts or clears, depending on the CLI.
		t.state = typedNormal
		t.unknownEdit()
	}
	return out
}

// sequence applies a complete CSI (ESC [) or SS3 (ESC O) key sequence.
func (t *typedLine) sequence(kind int, seq string) {
	switch {
	case kind == typedCSI && seq == "200~":
		t.state, t.paste = typedPaste, t.paste[:0]
	case seq == "D":
		t.cursor = max(t.cursor-1, 0)
	case seq == "C":
		t.cursor = min(t.cursor+1, len(t.buf))
	case seq == "H" || seq == "1~" || seq == "7~":
		t.cursor = 0
	case seq == "F" || seq == "4~" || seq == "8~":
		t.cursor = len(t.buf)
	case seq == "3~":
		t.deleteAt()
	case kind == typedCSI && (seq == "I" || seq == "O" || strings.HasSuffix(seq, "R") || strings.HasSuffix(seq, "c") ||
		strings.HasPrefix(seq, "<") || seq == "M"):
		// focus, cursor position and device attribute reports, mouse: no edit
	case seq == "A" || seq == "B":
		t.lost = true // Up/Down recall history or move between lines: the prompt holds what the model cannot see
	default:
		t.unknownEdit() // modified keys, function keys
	}
}

func (t *typedLine) insert(rs ...rune) {
	t.buf = append(t.buf[:t.cursor], append(rs, t.buf[t.cursor:]...)...)
	t.cursor += len(rs)
}

func (t *typedLine) deleteAt() {
	if t.cursor < len(t.buf) {
		t.buf = append(t.buf[:t.cursor], t.buf[t.cursor+1:]...)
	}
}

// unknownEdit is a key whose effect on the prompt the model does not know:
// harmless on an empty line (an Escape to interrupt), otherwise the line is
// not announced.
func (t *typedLine) unknownEdit() {
	if len(t.buf) > 0 {
		t.lost = true
	}
}

func (t *typedLine) reset() {
	t.buf, t.cursor, t.lost = t.buf[:0], 0, false
}
