package claude

import (
	"testing"

	"aicli.dev/aicli/guest/harness/harnesstest"
	"aicli.dev/aicli/guest/ptyapi"
)

func TestClassifyCapturedScreens(t *testing.T) {
	a := New(Options{})
	cases := []struct {
		file string
		want ptyapi.ExecutionStatus
	}{
		{"idle-startup.txt", ptyapi.StatusIdle},
		{"idle-footer-first-frame.txt", ptyapi.StatusIdle},
		{"idle-manual-mode.txt", ptyapi.StatusIdle},
		{"idle-typed-not-submitted.txt", ptyapi.StatusIdle},
		{"busy-spinner.txt", ptyapi.StatusBusy},
		// Reply text streaming slowly: the footer keeps "esc to interrupt".
		{"busy-streaming.txt", ptyapi.StatusBusy},
		{"idle-after-reply.txt", ptyapi.StatusIdle},
		// Rendered by guest/vtscreen (the PTY host's emulator since b588b87); the others by charmbracelet/x/vt.
		{"vtscreen-busy-streaming.txt", ptyapi.StatusBusy},
		{"vtscreen-idle-after-reply.txt", ptyapi.StatusIdle},
		// claude --resume <id>: the earlier turns replayed above the prompt.
		{"idle-resumed.txt", ptyapi.StatusIdle},
		// The folder-trust dialog draws a "❯" option line; it must not read as the prompt.
		{"waiting-trust-folder.txt", ptyapi.StatusWaitingForInput},
		// A Bash permission prompt (--permission-mode default, tool call from the fake provider).
		{"waiting-permission-bash.txt", ptyapi.StatusWaitingForInput},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			got, ok := a.Classify(harnesstest.LoadScreen(t, c.file))
			if !ok || got != c.want {
				t.Fatalf("Classify = %q, %v; want %q", got, ok, c.want)
			}
		})
	}
}

func TestClassifyNoCues(t *testing.T) {
	a := New(Options{})
	if st, ok := a.Classify(ptyapi.Screen{Lines: []string{"", " Claude Code", ""}}); ok {
		t.Fatalf("splash classified %q", st)
	}
	// The prompt without a footer is not enough (e.g. a dialog's option row).
	if st, ok := a.Classify(ptyapi.Screen{Lines: []string{"❯ 1. Yes", "  2. No"}}); ok {
		t.Fatalf("option list classified %q", st)
	}
}
