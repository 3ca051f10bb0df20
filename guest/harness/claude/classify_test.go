package claude

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"aicli.dev/aicli/guest/ptyapi"
)

// loadScreen reads a screen captured from Claude Code 2.1.332 on a 120x40 PTY
// (hack/realcli/ptycapture) and pads it to the full height.
func loadScreen(t *testing.T, name string) ptyapi.Screen {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "screens", name))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for len(lines) < 40 {
		lines = append(lines, "")
	}
	return ptyapi.Screen{Cols: 120, Rows: 40, Lines: lines}
}

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
			got, ok := a.Classify(loadScreen(t, c.file))
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
