package claude

import (
	"strings"

	"aicli.dev/aicli/guest/ptyapi"
)

// Screen cues of Claude Code 2.1.332, as rendered on a 120x40 terminal.
const (
	// BusyHint is shown next to the spinner while a turn runs.
	BusyHint = "esc to interrupt"
	// PromptPrefix starts the input box's line.
	PromptPrefix = "❯"
	// ModeHint is in the footer under the input box.
	ModeHint = "shift+tab to cycle"
	// ShortcutsHint is in the footer under an empty input box.
	ShortcutsHint = "? for shortcuts"
)

// footerMarks start the permission-mode footer line (auto, accept-edits,
// plan: "⏵⏵"; manual: "⏸").
var footerMarks = []string{"⏵⏵", "⏸"}

// waitingCues are dialogs that need an answer before the CLI goes on.
var waitingCues = []string{
	"Do you want to proceed?",
	"Do you want to make this edit",
	"Do you want to create",
	"Do you trust the files in this folder?",
	"Is this a project you created or one you trust?",
	"Do you want to use this API key?",
	"Yes, I trust this folder",
	"Enter to confirm · Esc to cancel",
}

// Classify implements harness.Adapter. A dialog waiting for an answer wins;
// the busy hint wins over the input box (which stays drawn while Claude works).
func (a *Adapter) Classify(s ptyapi.Screen) (ptyapi.ExecutionStatus, bool) {
	prompt, footer, busy := false, false, false
	for _, l := range s.Lines {
		t := strings.TrimSpace(l)
		for _, c := range waitingCues {
			if strings.Contains(t, c) {
				return ptyapi.StatusWaitingForInput, true
			}
		}
		switch {
		case strings.Contains(t, BusyHint):
			busy = true
		case strings.HasPrefix(t, PromptPrefix) || strings.HasPrefix(t, "│ "+PromptPrefix):
			prompt = true
		case strings.Contains(t, ModeHint) || strings.Contains(t, ShortcutsHint) || hasAnyPrefix(t, footerMarks):
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

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
