package ptyclient

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestLineReaderBound: a line of max bytes is returned, longer ones (within one buffered read or across many)
// are skipped, and the lines after them are read.
func TestLineReaderBound(t *testing.T) {
	const max = 100 << 10 // the reader's buffer is 64 KiB: lines span reads
	lines := []string{strings.Repeat("a", max), strings.Repeat("b", max+1), strings.Repeat("c", 300<<10), "", "x", "last"}
	lr := newLineReader(strings.NewReader(strings.Join(lines, "\n")), max)
	var got []string
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
	if len(got) != 4 || got[0] != lines[0] || got[1] != "" || got[2] != "x" || got[3] != "last" {
		short := make([]string, len(got))
		for i, g := range got {
			short[i] = g[:min(len(g), 3)]
		}
		t.Fatalf("got %d lines %q…, want the max-long one, the empty one, x and last", len(got), short)
	}
}
