package codex

import (
	"strings"
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
		{"idle-startup-logo.txt", ptyapi.StatusIdle},
		{"busy-working.txt", ptyapi.StatusBusy},
		{"busy-working-line.txt", ptyapi.StatusBusy},
		// The spinner is gone but the reply has not arrived or is still streaming.
		{"busy-submitted-no-spinner.txt", ptyapi.StatusBusy},
		{"busy-streaming-no-spinner.txt", ptyapi.StatusBusy},
		{"idle-after-reply.txt", ptyapi.StatusIdle},
		// Rendered by guest/vtscreen (the PTY host's emulator since b588b87); the others by charmbracelet/x/vt.
		{"vtscreen-busy-streaming-no-spinner.txt", ptyapi.StatusBusy},
		{"vtscreen-idle-after-reply.txt", ptyapi.StatusIdle},
		{"busy-resuming.txt", ptyapi.StatusBusy},
		{"idle-resumed.txt", ptyapi.StatusIdle},
		{"waiting-trust-folder.txt", ptyapi.StatusWaitingForInput},
		// An exec_command with require_escalated from the fake provider.
		{"waiting-approve-command.txt", ptyapi.StatusWaitingForInput},
		{"busy-after-approval-ran.txt", ptyapi.StatusBusy},
		{"busy-reply-after-tool-no-spinner.txt", ptyapi.StatusBusy},
		{"idle-after-tool-turn.txt", ptyapi.StatusIdle},
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

func TestClassifyStreamingNeverIdle(t *testing.T) {
	// Every screen of a slowly streamed reply, from submission until the
	// "Worked for" line, must be BUSY: cut the finished screen back line by line.
	a := New(Options{})
	done := harnesstest.LoadScreen(t, "idle-after-reply.txt")
	composer := -1
	for i, l := range done.Lines {
		if strings.HasPrefix(l, ComposerPrefix) {
			composer = i
		}
	}
	worked := -1
	for i := composer - 1; i >= 0; i-- {
		if strings.Contains(done.Lines[i], TurnDone) {
			worked = i
			break
		}
	}
	if composer < 0 || worked < 0 {
		t.Fatal("fixture lacks composer or Worked line")
	}
	for cut := worked - 1; cut >= 0 && !strings.HasPrefix(done.Lines[cut+1], ComposerPrefix); cut-- {
		s := done
		s.Lines = append(append([]string(nil), done.Lines[:cut+1]...), done.Lines[composer:]...)
		if got, _ := a.Classify(s); got != ptyapi.StatusBusy {
			t.Fatalf("history cut after line %d (%q): %q, want BUSY", cut, done.Lines[cut], got)
		}
	}
}

func TestClassifyNoCues(t *testing.T) {
	a := New(Options{})
	if st, ok := a.Classify(ptyapi.Screen{Lines: []string{"", "loading", ""}}); ok {
		t.Fatalf("blank screen classified %q", st)
	}
	if st, ok := a.Classify(ptyapi.Screen{Lines: []string{"› go", "✔ You approved codex to run ls this time",
		"› Ask Codex to do anything", "  ? for shortcuts"}}); !ok || st != ptyapi.StatusBusy {
		t.Fatalf("approved, command not yet drawn: %q %v", st, ok)
	}
	if st, ok := a.Classify(ptyapi.Screen{Lines: []string{"■ Conversation interrupted", "› Ask Codex to do anything",
		"  ? for shortcuts"}}); !ok || st != ptyapi.StatusIdle {
		t.Fatalf("interrupted turn: %q %v", st, ok)
	}
}
