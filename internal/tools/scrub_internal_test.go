package tools

import (
	"strings"
	"testing"
)

// TestScrubEverySplit: a secret is redacted at every split point of the output, across up to three writes, and
// output without secrets is not held back.
func TestScrubEverySplit(t *testing.T) {
	secrets := map[string][]byte{"a": []byte("hunter22"), "b": []byte("hunter22-long"), "short": []byte("abc")}
	text := "x hunter22 y hunter22-long z hunt abc hunter2"
	want := "x [REDACTED] y [REDACTED] z hunt abc hunter2"
	for i := 0; i <= len(text); i++ {
		for j := i; j <= len(text); j++ {
			s := newScrubber(secrets)
			var out strings.Builder
			out.Write(s.push([]byte(text[:i])))
			out.Write(s.push([]byte(text[i:j])))
			out.Write(s.push([]byte(text[j:])))
			out.Write(s.flush())
			if out.String() != want {
				t.Fatalf("split %d,%d: %q", i, j, out.String())
			}
		}
	}
	s := newScrubber(secrets)
	if got := string(s.push([]byte("plain output\n"))); got != "plain output\n" {
		t.Fatalf("held back %q", got)
	}
}
