package gemini

import (
	"strings"

	"aicli.dev/aicli/guest/ptyapi"
)

// Screen cues of Gemini CLI 0.61.0, as rendered on a 120x40 terminal.
const (
	// BusyHint is shown next to the spinner while a turn runs.
	BusyHint = "esc to cancel"
	// ResumingHint is shown while "gemini --resume" loads the session (it
	// replaces an idle-looking first frame; typing before it is lost).
	ResumingHint = "Resuming session"
	// InputPlaceholder is in the empty input box.
	InputPlaceholder = "Type your message"
	// PromptPrefix starts the input box's line (and every submitted message).
	PromptPrefix = ">"
	// FooterHint heads the status footer drawn under the input box.
	FooterHint = "workspace (/directory)"
)

// waitingCues are dialogs that need an answer before the CLI goes on.
var waitingCues = []string{
	"Do you trust the files in this folder?",
	"Do you trust this folder?",
	"Allow execution of",
	"Apply this change?",
	"Do you want to proceed?",
	"Waiting for user confirmation",
}

// Classify implements harness.Adapter.
func (a *Adapter) Classify(s ptyapi.Screen) (ptyapi.ExecutionStatus, bool) {
	prompt, footer, busy := false, false, false
	for _, l := range s.Lines {
		t := strings.TrimSpace(strings.Trim(l, "│ "))
		for _, c := range waitingCues {
			if strings.Contains(t, c) {
				return ptyapi.StatusWaitingForInput, true
			}
		}
		switch {
		case strings.Contains(t, BusyHint), strings.Contains(t, ResumingHint):
			busy = true
		case strings.HasPrefix(t, PromptPrefix):
			prompt = true
		case strings.HasPrefix(t, FooterHint):
			footer = true
		}
	}
	switch {
	case busy:
		return ptyapi.StatusBusy, true
	case prompt && footer:
		return ptyapi.StatusIdle, true
	}
	return "", false
}
