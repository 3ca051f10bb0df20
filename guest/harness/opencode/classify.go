package opencode

import (
	"regexp"
	"strings"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// Screen cues of OpenCode 1.18.33, as rendered on a 120x40 terminal.
const (
	// BusyHint is in the footer while a turn runs.
	BusyHint = "esc interrupt"
	// InputPlaceholder is in the empty input box of the start screen.
	InputPlaceholder = "Ask anything"
	// BoxBottom starts the input box's bottom edge.
	BoxBottom = "╹▀▀"
	// BoxBar starts every line of the input box and of a user message.
	BoxBar = "┃"
	// ReplyMark starts the footer line of an assistant message
	// ("▣  Build · <model>", with " · <duration>" once the message is done).
	ReplyMark = "▣"
	// LogoRow is the top row of the "opencode" logo, drawn only on the start
	// screen.
	LogoRow = "█▀▀█ █▀▀█ █▀▀█ █▀▀▄"
)

// doneRE matches the duration OpenCode appends to a finished message's footer.
var doneRE = regexp.MustCompile(`· (\d+h ?)?(\d+m ?)?\d+(\.\d+)?(ms|s)\b`)

// waitingCues are dialogs that need an answer before the CLI goes on.
var waitingCues = []string{
	"Permission required",
	"Allow once",
}

// Classify implements harness.Adapter.
//
// OpenCode shows "esc interrupt" only once the model call is under way: for
// a second or more after a message is submitted, the session view shows the
// message and an empty input box with no spinner. So the session view is IDLE
// only when the last history item above the input box is a finished assistant
// message (its "▣ … · <duration>" footer); a submitted message with no reply
// footer below it, or an unfinished footer, means BUSY.
func (a *Adapter) Classify(s ptyapi.Screen) (ptyapi.ExecutionStatus, bool) {
	box := -1
	placeholder := false
	for i, l := range s.Lines {
		t := strings.TrimSpace(l)
		for _, c := range waitingCues {
			if strings.Contains(t, c) {
				return ptyapi.StatusWaitingForInput, true
			}
		}
		if strings.Contains(t, BusyHint) {
			return ptyapi.StatusBusy, true
		}
		if strings.HasPrefix(t, BoxBottom) {
			box = i
		}
		if strings.Contains(t, InputPlaceholder) {
			placeholder = true
		}
	}
	if box < 0 {
		return "", false
	}
	// The input box: the bar lines directly above its bottom edge.
	top := box
	for top > 0 && strings.HasPrefix(strings.TrimSpace(s.Lines[top-1]), BoxBar) {
		top--
	}
	history := s.Lines[:top]
	for i := len(history) - 1; i >= 0; i-- {
		t := strings.TrimSpace(history[i])
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, ReplyMark):
			if doneRE.MatchString(t) {
				return ptyapi.StatusIdle, true
			}
			return ptyapi.StatusBusy, true
		case strings.HasPrefix(t, BoxBar):
			// A submitted message with no reply footer below it yet.
			return ptyapi.StatusBusy, true
		}
	}
	// No history: the start screen (logo and placeholder), or a session view
	// whose history has scrolled away (a reply longer than the screen).
	if placeholder {
		return ptyapi.StatusIdle, true
	}
	return ptyapi.StatusBusy, true
}

var _ harness.StartScreener = (*Adapter)(nil)

// IsStartScreen implements harness.StartScreener: the logo above the input
// box. OpenCode 1.18.33 keeps it on the screen after the first message of a
// session is submitted until the session exists (1.5–3 s on a loaded 2-core
// machine), with the input box empty again: IDLE to Classify.
func (a *Adapter) IsStartScreen(s ptyapi.Screen) bool {
	for _, l := range s.Lines {
		if strings.Contains(l, LogoRow) {
			return true
		}
	}
	return false
}
