package cli

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

type uiState int

const (
	stIdle uiState = iota
	stBusy
	stWaiting
)

var spinnerFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// tui is the full-screen front end used when stdin is a terminal.
type tui struct {
	s          *session
	out        *os.File
	cols, rows int
	history    []string
	input      []byte
	state      uiState
	queue      []string
	turn       int    // turn in progress
	turnText   string // its message
	timer      *time.Timer
	spin       int
	events     chan event
	done       chan int // turn number completed by the timer
}

func runTUI(s *session, stdin, stdout *os.File) int {
	old, err := term.MakeRaw(int(stdin.Fd()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake-cli: raw mode: %v\n", err)
		return 1
	}
	t := &tui{s: s, out: stdout, events: make(chan event, 64), done: make(chan int, 1)}
	t.size()
	t.history = append(t.history, "fake cli — session "+s.id)
	if s.instructions != "" {
		t.history = append(t.history, s.instructionsLine())
	}
	t.history = append(t.history, s.restored...)
	var setup bytes.Buffer
	if s.cfg.altScreen {
		setup.WriteString("\x1b[?1049h")
	}
	setup.WriteString("\x1b[?2004h")
	if s.cfg.probe {
		// Put the cursor somewhere known, then ask where it is and what we are.
		setup.WriteString("\x1b[5;10H\x1b[6n\x1b[c")
	}
	_, _ = t.out.Write(setup.Bytes())
	restore := func() {
		var b bytes.Buffer
		b.WriteString("\x1b[?2004l\x1b[?25h")
		if s.cfg.altScreen {
			b.WriteString("\x1b[?1049l")
		}
		_, _ = t.out.Write(b.Bytes())
		_ = term.Restore(int(stdin.Fd()), old)
	}
	go readInput(stdin, t.events)
	winch, stopWinch := notifyResize()
	defer stopWinch()
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	t.draw()
	for {
		select {
		case ev := <-t.events:
			if code, exit := t.handle(ev); exit {
				if code != 3 {
					restore()
				}
				return code
			}
		case turn := <-t.done:
			if code, exit := t.finishTurn(turn, false); exit {
				return code
			}
		case <-winch:
			t.size()
		case <-ticker.C:
			if t.state != stBusy {
				continue
			}
			t.spin++
		}
		t.draw()
	}
}

func readInput(f *os.File, events chan<- event) {
	var p inputParser
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		for _, ev := range p.feed(buf[:n], true) {
			events <- ev
		}
		if err != nil {
			events <- event{kind: evEOF}
			return
		}
	}
}

func (t *tui) size() {
	c, r, err := term.GetSize(int(t.out.Fd()))
	if err != nil || c <= 0 || r <= 0 {
		c, r = 80, 24
	}
	t.cols, t.rows = c, r
}

// handle applies one input event; exit=true ends the program with code.
func (t *tui) handle(ev event) (code int, exit bool) {
	switch ev.kind {
	case evEOF:
		return 0, true
	case evCPR:
		t.history = append(t.history, fmt.Sprintf("cursor position report: row=%d col=%d", ev.row, ev.col))
	case evDA:
		t.history = append(t.history, "device attributes: "+ev.text)
	case evText, evPaste:
		if t.state == stWaiting {
			if ans := strings.ToLower(strings.TrimSpace(ev.text)); ans == "y" || ans == "n" {
				return t.answer(ans == "y")
			}
			return 0, false
		}
		t.input = append(t.input, ev.text...)
	case evBackspace:
		if len(t.input) > 0 {
			_, n := utf8.DecodeLastRune(t.input)
			t.input = t.input[:len(t.input)-n]
		}
	case evEnter:
		if t.state == stWaiting || len(t.input) == 0 {
			return 0, false
		}
		text := strings.ReplaceAll(string(t.input), "\r\n", "\n")
		text = strings.ReplaceAll(text, "\r", "\n")
		t.input = t.input[:0]
		if text == "/exit" {
			return 0, true
		}
		if t.state == stBusy {
			t.queue = append(t.queue, text)
			return 0, false
		}
		return t.startTurn(text)
	case evEscape, evCtrlC:
		if t.state == stBusy {
			t.timer.Stop()
			return t.finishTurn(t.turn, true)
		}
		t.input = t.input[:0]
	case evCtrlD:
		if len(t.input) == 0 && t.state == stIdle {
			return 0, true
		}
	}
	return 0, false
}

func (t *tui) startTurn(text string) (int, bool) {
	turn, err := t.s.userTurn(text)
	if err != nil {
		t.history = append(t.history, "error: "+err.Error())
		return 1, true
	}
	t.history = append(t.history, "user: "+text)
	if strings.Contains(text, MarkCrash) {
		return 3, true
	}
	t.turn, t.turnText = turn, text
	if strings.Contains(text, MarkAsk) {
		t.state = stWaiting
		return 0, false
	}
	t.beginBusy()
	return 0, false
}

func (t *tui) answer(yes bool) (int, bool) {
	if yes {
		t.history = append(t.history, "permission: granted")
	} else {
		t.history = append(t.history, "permission: denied")
	}
	t.beginBusy()
	return 0, false
}

func (t *tui) beginBusy() {
	t.state = stBusy
	turn := t.turn
	t.timer = time.AfterFunc(t.s.turnDelay(t.turnText), func() { t.done <- turn })
}

func (t *tui) finishTurn(turn int, interrupted bool) (int, bool) {
	if t.state != stBusy || turn != t.turn {
		return 0, false // a stale timer after an interrupt
	}
	if interrupted {
		t.history = append(t.history, "interrupted")
	}
	t.history = append(t.history, t.s.sideEffects(t.turnText)...)
	reply := t.s.replyText(turn, t.turnText)
	if interrupted {
		reply = fmt.Sprintf(ReplyPrefixFmt, turn) + "(interrupted)"
	}
	if err := t.s.assistantTurn(turn, t.turnText, reply); err != nil {
		t.history = append(t.history, "error: "+err.Error())
		return 1, true
	}
	t.history = append(t.history, reply)
	t.state = stIdle
	if len(t.queue) > 0 {
		next := t.queue[0]
		t.queue = t.queue[1:]
		return t.startTurn(next)
	}
	return 0, false
}

// draw repaints the whole screen, positioning every row with cursor moves.
func (t *tui) draw() {
	var b bytes.Buffer
	b.WriteString("\x1b[?25l\x1b[H\x1b[2J")
	width := t.cols - 1
	if width < 10 {
		width = 10
	}
	var wrapped []string
	for _, h := range t.history {
		for _, l := range strings.Split(h, "\n") {
			wrapped = append(wrapped, wrap(l, width)...)
		}
	}
	if t.state == stWaiting {
		wrapped = append(wrapped, "Permission required: fake tool call for turn "+fmt.Sprint(t.turn), PermissionAsk)
	}
	histRows := t.rows - 3
	if histRows < 1 {
		histRows = 1
	}
	if len(wrapped) > histRows {
		wrapped = wrapped[len(wrapped)-histRows:]
	}
	for i, l := range wrapped {
		fmt.Fprintf(&b, "\x1b[%d;1H%s", i+1, l)
	}
	if t.state == stBusy {
		fmt.Fprintf(&b, "\x1b[%d;1H%c Working… (%s)", t.rows-2, spinnerFrames[t.spin%len(spinnerFrames)], BusyHint)
	}
	in := strings.ReplaceAll(string(t.input), "\n", "⏎")
	in = strings.ReplaceAll(in, "\r", "⏎")
	if max := t.cols - len(PromptPrefix) - 1; utf8.RuneCountInString(in) > max && max > 0 {
		r := []rune(in)
		in = string(r[len(r)-max:])
	}
	fmt.Fprintf(&b, "\x1b[%d;1H%s%s", t.rows-1, PromptPrefix, in)
	right := fmt.Sprintf("cols=%d rows=%d", t.cols, t.rows)
	if q := t.s.quotaLine(); q != "" {
		right = q + " · " + right
	}
	fmt.Fprintf(&b, "\x1b[%d;1H%s", t.rows, FooterHint)
	if col := t.cols - utf8.RuneCountInString(right); col > len(FooterHint)+2 {
		fmt.Fprintf(&b, "\x1b[%d;%dH%s", t.rows, col, right)
	}
	fmt.Fprintf(&b, "\x1b[%d;%dH\x1b[?25h", t.rows-1, len(PromptPrefix)+utf8.RuneCountInString(in)+1)
	_, _ = t.out.Write(b.Bytes())
}

// wrap splits l into pieces of at most width runes.
func wrap(l string, width int) []string {
	r := []rune(l)
	if len(r) <= width {
		return []string{l}
	}
	var out []string
	for len(r) > width {
		out = append(out, string(r[:width]))
		r = r[width:]
	}
	return append(out, string(r))
}
