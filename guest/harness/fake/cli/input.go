package cli

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// eventKind is the kind of a parsed terminal input event.
type eventKind int

const (
	evText eventKind = iota
	evPaste
	evEnter
	evBackspace
	evCtrlC
	evCtrlD
	evEscape
	evCPR
	evDA
	evEOF
)

// event is one parsed input event.
type event struct {
	kind     eventKind
	text     string
	row, col int
}

var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

// inputParser turns raw terminal input bytes into events. It understands
// bracketed paste, CSI sequences (cursor position and device attribute
// replies; other keys are ignored) and a few control characters.
type inputParser struct {
	state   int // 0 normal, 1 after ESC, 2 in CSI, 3 in paste
	csi     []byte
	paste   []byte
	pending []byte // incomplete UTF-8 text
}

// feed parses b and returns the events it completes. endOfRead marks the end
// of one read: a lone ESC at that point is the Escape key.
func (p *inputParser) feed(b []byte, endOfRead bool) []event {
	var out []event
	var text []byte
	flushText := func() {
		if len(text) > 0 {
			out = append(out, event{kind: evText, text: string(text)})
			text = nil
		}
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch p.state {
		case 3:
			p.paste = append(p.paste, c)
			if bytes.HasSuffix(p.paste, pasteEnd) {
				out = append(out, event{kind: evPaste, text: string(p.paste[:len(p.paste)-len(pasteEnd)])})
				p.paste = nil
				p.state = 0
			}
		case 1:
			if c == '[' {
				p.state = 2
				p.csi = p.csi[:0]
				continue
			}
			p.state = 0
			flushText()
			out = append(out, event{kind: evEscape})
			i-- // reprocess c as normal input
		case 2:
			p.csi = append(p.csi, c)
			if c >= 0x40 && c <= 0x7e {
				p.state = 0
				if ev, ok := p.csiEvent(); ok {
					flushText()
					out = append(out, ev)
				}
			}
		default:
			switch {
			case c == 0x1b:
				p.state = 1
			case c == '\r' || c == '\n':
				flushText()
				out = append(out, event{kind: evEnter})
			case c == 0x7f || c == 0x08:
				flushText()
				out = append(out, event{kind: evBackspace})
			case c == 0x03:
				flushText()
				out = append(out, event{kind: evCtrlC})
			case c == 0x04:
				flushText()
				out = append(out, event{kind: evCtrlD})
			case c < 0x20:
				// other control characters are ignored
			default:
				text = append(text, c)
			}
		}
	}
	if p.state == 1 && endOfRead {
		p.state = 0
		flushText()
		out = append(out, event{kind: evEscape})
	}
	flushText()
	return p.completeUTF8(out)
}

// completeUTF8 holds back a trailing partial UTF-8 sequence of text events.
func (p *inputParser) completeUTF8(evs []event) []event {
	out := evs[:0]
	for _, ev := range evs {
		if ev.kind != evText {
			out = append(out, ev)
			continue
		}
		s := string(p.pending) + ev.text
		p.pending = nil
		cut := len(s)
		for cut > 0 && !utf8.ValidString(s[:cut]) && len(s)-cut < utf8.UTFMax {
			cut--
		}
		if cut < len(s) && utf8.ValidString(s[:cut]) {
			p.pending = []byte(s[cut:])
			s = s[:cut]
		}
		if s != "" {
			out = append(out, event{kind: evText, text: s})
		}
	}
	return out
}

// csiEvent interprets a completed CSI sequence held in p.csi.
func (p *inputParser) csiEvent() (event, bool) {
	seq := string(p.csi)
	switch {
	case seq == "200~":
		p.state = 3
		p.paste = p.paste[:0]
		return event{}, false
	case strings.HasSuffix(seq, "R"):
		parts := strings.Split(strings.TrimSuffix(seq, "R"), ";")
		if len(parts) != 2 {
			return event{}, false
		}
		r, err1 := strconv.Atoi(parts[0])
		c, err2 := strconv.Atoi(parts[1])
		if err1 != nil || err2 != nil {
			return event{}, false
		}
		return event{kind: evCPR, row: r, col: c}, true
	case strings.HasPrefix(seq, "?") && strings.HasSuffix(seq, "c"):
		return event{kind: evDA, text: seq}, true
	}
	return event{}, false
}
