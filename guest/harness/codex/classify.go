package codex

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"aicli.dev/aicli/guest/ptyapi"
)

// Screen cues of Codex CLI 0.171.0 (inline TUI, no alternate screen).
const (
	// ComposerPrefix starts the input line and every submitted user line.
	ComposerPrefix = "›"
	// ReplyPrefix starts an assistant or tool cell.
	ReplyPrefix = "•"
	// NoticePrefix starts an interruption or error cell, after which the turn is over.
	NoticePrefix = "■"
	// TurnDone starts the cell Codex prints when a turn has ended.
	TurnDone = "Worked for"
	// ShortcutsHint is in the footer whenever the composer is shown.
	ShortcutsHint = "? for shortcuts"
	// Approved starts the line Codex prints when a command was approved mid-turn.
	Approved = "✔ You approved"
	// Header is the first line of the session header.
	Header = ">_ OpenAI Codex"
)

// busyCues are shown only while a turn runs.
var busyCues = []string{"esc to interrupt", "tab to queue message", "Resuming session"}

// waitingCues are dialogs that need an answer before Codex goes on.
var waitingCues = []string{
	"Trust this folder?",
	"Do you trust the contents of this directory?",
	"Would you like to run the following command?",
	"Would you like to make the following edits?",
	"Allow Codex to",
	"Press enter to confirm or esc to cancel",
}

// Classify implements harness.Adapter.
//
// Codex hides its "Working … esc to interrupt" spinner as soon as reply text
// streams, and keeps the composer and "? for shortcuts" drawn the whole time,
// so those alone would report IDLE mid-reply. A turn is over only when the
// last history cell above the composer is Codex's "Worked for …" line (or an
// interruption/error notice, or the session header on a fresh start); a
// submitted user line or a reply cell there means the turn is still running.
func (a *Adapter) Classify(s ptyapi.Screen) (ptyapi.ExecutionStatus, bool) {
	composer := -1
	for i, l := range s.Lines {
		t := strings.TrimSpace(l)
		for _, c := range waitingCues {
			if strings.Contains(t, c) {
				return ptyapi.StatusWaitingForInput, true
			}
		}
		for _, c := range busyCues {
			if strings.Contains(t, c) {
				return ptyapi.StatusBusy, true
			}
		}
		if strings.HasPrefix(l, ComposerPrefix) {
			composer = i
		}
	}
	if composer < 0 || !hasLine(s.Lines[composer:], ShortcutsHint) {
		return "", false
	}
	if turnRunning(s.Lines[:composer]) {
		return ptyapi.StatusBusy, true
	}
	return ptyapi.StatusIdle, true
}

func hasLine(lines []string, cue string) bool {
	for _, l := range lines {
		if strings.Contains(l, cue) {
			return true
		}
	}
	return false
}

// turnRunning scans the history above the composer from the bottom up.
func turnRunning(history []string) bool {
	for i := len(history) - 1; i >= 0; i-- {
		l := history[i]
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, TurnDone), strings.HasPrefix(t, "─ "+TurnDone):
			return false
		case strings.HasPrefix(t, NoticePrefix), strings.HasPrefix(t, Header):
			return false
		case strings.HasPrefix(l, ReplyPrefix), strings.HasPrefix(l, ComposerPrefix), strings.HasPrefix(t, Approved):
			// A reply cell, a submitted message or an approval with no
			// end-of-turn line below it.
			return true
		case isLogo(t):
			return false
		case strings.HasPrefix(l, " "):
			// Continuation of a multi-line cell: keep looking for its first line.
			continue
		default:
			return false
		}
	}
	// Only continuation lines on screen: a reply longer than the screen is
	// still being written (a finished one would end with "Worked for").
	return len(history) > 0 && strings.TrimSpace(strings.Join(history, "")) != ""
}

// isLogo reports whether t is a line of the braille start-up animation.
func isLogo(t string) bool {
	r, _ := utf8.DecodeRuneInString(t)
	return r >= 0x2800 && r <= 0x28ff || unicode.Is(unicode.Braille, r)
}
