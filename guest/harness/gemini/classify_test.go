package gemini

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
		// Pasted, Enter not yet taken: the text sits in the input box.
		{"idle-typed-not-submitted.txt", ptyapi.StatusIdle},
		{"busy-thinking.txt", ptyapi.StatusBusy},
		// Reply text streaming slowly: the spinner line keeps "esc to cancel".
		{"busy-streaming.txt", ptyapi.StatusBusy},
		{"idle-after-reply.txt", ptyapi.StatusIdle},
		// gemini --resume: the history is being replayed (typing now is lost).
		{"busy-resuming.txt", ptyapi.StatusBusy},
		{"idle-resumed.txt", ptyapi.StatusIdle},
		// settings.json with security.folderTrust.enabled = true (ptycapture -untrusted).
		{"waiting-trust-folder.txt", ptyapi.StatusWaitingForInput},
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
	if st, ok := a.Classify(ptyapi.Screen{Lines: []string{"", "loading", ""}}); ok {
		t.Fatalf("blank screen classified %q", st)
	}
	// A submitted message in the history is drawn like the input box; without
	// the footer under the box it is not the prompt.
	if st, ok := a.Classify(ptyapi.Screen{Lines: []string{"▄▄▄", " > hello there", "▀▀▀", "✦ echo: hello"}}); ok {
		t.Fatalf("history only classified %q", st)
	}
	if st, ok := a.Classify(ptyapi.Screen{Lines: []string{" > ", " workspace (/directory)",
		"Allow execution of: 'ls'?"}}); !ok || st != ptyapi.StatusWaitingForInput {
		t.Fatalf("confirmation: %q %v", st, ok)
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
