package opencode

import (
	"encoding/json"
	"os"
	"path/filepath"
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
		{"idle-startup.txt", ptyapi.StatusIdle},
		// Submitted: the session view shows the message, no spinner yet (for
		// over a second on the first turn).
		{"busy-submitted-no-spinner.txt", ptyapi.StatusBusy},
		{"busy-working.txt", ptyapi.StatusBusy},
		{"busy-streaming.txt", ptyapi.StatusBusy},
		{"idle-after-reply.txt", ptyapi.StatusIdle},
		{"idle-after-three-turns.txt", ptyapi.StatusIdle},
		// opencode --session <id>: the session view before the history is drawn.
		{"busy-resume-loading.txt", ptyapi.StatusBusy},
		{"idle-resumed.txt", ptyapi.StatusIdle},
		// A bash tool call (from the fake provider) touching a path outside the working directory.
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

func TestClassifyStreamingNeverIdle(t *testing.T) {
	// The finished screen with its reply footer's duration removed (the
	// footer while the reply streams) must be BUSY.
	a := New(Options{})
	s := harnesstest.LoadScreen(t, "idle-after-reply.txt")
	found := false
	for i, l := range s.Lines {
		if strings.Contains(l, ReplyMark) {
			s.Lines[i] = doneRE.ReplaceAllString(l, "")
			found = true
		}
	}
	if !found {
		t.Fatal("fixture has no reply footer")
	}
	if got, _ := a.Classify(s); got != ptyapi.StatusBusy {
		t.Fatalf("unfinished reply footer: %q, want BUSY", got)
	}
}

func TestClassifyNoCues(t *testing.T) {
	a := New(Options{})
	if st, ok := a.Classify(ptyapi.Screen{Lines: []string{"", "loading", ""}}); ok {
		t.Fatalf("blank screen classified %q", st)
	}
	if st, ok := a.Classify(ptyapi.Screen{Lines: []string{"  △ Permission required", "  ┃", "  ╹▀▀▀"}}); !ok ||
		st != ptyapi.StatusWaitingForInput {
		t.Fatalf("permission dialog: %q %v", st, ok)
	}
}

// slow-stream-frames.jsonl holds every distinct screen of a real turn whose
// reply was streamed at 150 ms per word, from the first reply word on screen
// to the first IDLE frame after it (hack/realcli/ptycapture, delay:150ms).
func TestClassifySlowStreamNeverIdleEarly(t *testing.T) {
	const reply = "echo: please stream a longer answer slowly now with many words in it"
	b, err := os.ReadFile(filepath.Join("testdata", "screens", "slow-stream-frames.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{})
	partial := 0
	var last ptyapi.ExecutionStatus
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var f struct {
			MS    int64    `json:"ms"`
			Lines []string `json:"lines"`
		}
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatal(err)
		}
		for len(f.Lines) < 40 {
			f.Lines = append(f.Lines, "")
		}
		st, _ := a.Classify(ptyapi.Screen{Cols: 120, Rows: 40, Lines: f.Lines})
		if !strings.Contains(strings.Join(f.Lines, "\n"), reply) {
			partial++
			if st != ptyapi.StatusBusy {
				t.Errorf("frame %d (%d ms): reply still streaming, classified %q", i, f.MS, st)
			}
		}
		last = st
	}
	if partial < 5 || last != ptyapi.StatusIdle {
		t.Fatalf("%d streaming frames, last frame %q; want several, then IDLE", partial, last)
	}
}

func TestIsStartScreen(t *testing.T) {
	a := New(Options{})
	for file, want := range map[string]bool{
		"idle-startup.txt":              true,
		"busy-submitted-no-spinner.txt": true, // text in the start screen's input box
		"idle-after-reply.txt":          false,
		"idle-resumed.txt":              false,
		"busy-resume-loading.txt":       false,
	} {
		if got := a.IsStartScreen(harnesstest.LoadScreen(t, file)); got != want {
			t.Errorf("%s: IsStartScreen = %v, want %v", file, got, want)
		}
	}
}
