// Package harnesstest holds test helpers shared by the harness adapters.
package harnesstest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"aicli.dev/aicli/guest/ptyapi"
)

// Screen sizes of the captured fixtures (hack/realcli/ptycapture runs CLIs on
// a 120x40 PTY).
const (
	Cols = 120
	Rows = 40
)

// LoadScreen reads testdata/screens/<name>, a screen captured from a real CLI,
// and pads it to the full height.
func LoadScreen(t testing.TB, name string) ptyapi.Screen {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "screens", name))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for len(lines) < Rows {
		lines = append(lines, "")
	}
	return ptyapi.Screen{Cols: Cols, Rows: Rows, Lines: lines}
}
