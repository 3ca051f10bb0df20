package match

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"aicli.dev/aicli/apis/v1alpha1"
)

// benchKeywords returns n distinct keywords: a few real trigger words, then
// pronounceable generated words of 5–12 letters; every third one Word mode.
func benchKeywords(n int) []v1alpha1.Keyword {
	r := rand.New(rand.NewPCG(1, 1000))
	seen := map[string]bool{}
	var words []string
	for _, w := range []string{"panic", "deadlock", "segfault", "traceback", "out of memory", "permission denied",
		"rm -rf", "force push", "DROP TABLE", "timeout", "fatal", "assertion failed"} {
		seen[w], words = true, append(words, w)
	}
	cons, vows := "bcdfghjklmnprstvwz", "aeiou"
	for len(words) < n {
		var b strings.Builder
		for b.Len() < 5+r.IntN(8) {
			b.WriteByte(cons[r.IntN(len(cons))])
			b.WriteByte(vows[r.IntN(len(vows))])
		}
		if w := b.String(); !seen[w] {
			seen[w], words = true, append(words, w)
		}
	}
	kws := make([]v1alpha1.Keyword, n)
	for i, w := range words[:n] {
		kws[i] = v1alpha1.Keyword{Text: w, Mode: v1alpha1.MatchSubstring}
		if i%3 == 0 {
			kws[i].Mode = v1alpha1.MatchWord
		}
	}
	return kws
}

// benchTranscript returns about size bytes of transcript-like text: prose
// and tool output lines (paths, timestamps, Go-ish code, a little non-ASCII)
// with a keyword about every 4 KB, half of them upper-cased.
func benchTranscript(size int, kws []v1alpha1.Keyword) string {
	r := rand.New(rand.NewPCG(2, 2000))
	vocab := strings.Fields(`the a to of and in is it that for on with as this be are was I you we can will
		file function error return value test build run container agent conversation message supervisor store
		event status condition ready pending running request response handler context deadline cancel retry
		config image volume network port token secret grant tool mount lease cursor transcript monitor keyword
		Let me check the failing test first. Now I'll update the reconciler and rerun. Looks good. Done.
		func err nil if else go defer struct interface map slice string int bool byte len append make range
		café naïve résumé Größe façade Zürich`)
	var b strings.Builder
	b.Grow(size + 256)
	next := 4096
	for b.Len() < size {
		switch r.IntN(4) {
		case 0: // a log line
			fmt.Fprintf(&b, "2026-12-05T10:%02d:%02d.%03dZ INFO controllers/%s.go:%d %s %s\n",
				r.IntN(60), r.IntN(60), r.IntN(1000), vocab[r.IntN(len(vocab))], r.IntN(900),
				vocab[r.IntN(len(vocab))], vocab[r.IntN(len(vocab))])
		case 1: // code
			fmt.Fprintf(&b, "\tif err := s.%s(ctx, %s); err != nil {\n\t\treturn fmt.Errorf(%q, err)\n\t}\n",
				vocab[r.IntN(len(vocab))], vocab[r.IntN(len(vocab))], vocab[r.IntN(len(vocab))]+": %w")
		default: // prose
			for range 8 + r.IntN(20) {
				b.WriteString(vocab[r.IntN(len(vocab))])
				b.WriteByte(' ')
			}
			b.WriteString(".\n")
		}
		if b.Len() >= next {
			next += 4096
			kw := kws[r.IntN(len(kws))].Text
			if r.IntN(2) == 0 {
				kw = strings.ToUpper(kw)
			}
			fmt.Fprintf(&b, "hit: %s.\n", kw)
		}
	}
	return b.String()
}

// BenchmarkMatch1000Keywords scans 4 MB of transcript-like text for 1,000
// keywords; baseline/bytes.Contains is one keyword over the same text in the
// same run (docs/benchmarks.md, "Monitor keyword matching").
func BenchmarkMatch1000Keywords(b *testing.B) {
	const size = 4 << 20
	kws := benchKeywords(1000)
	text := benchTranscript(size, kws)
	for _, tc := range []struct {
		name          string
		caseSensitive bool
	}{{"case-insensitive", false}, {"case-sensitive", true}} {
		b.Run(tc.name, func(b *testing.B) {
			m, err := Compile(v1alpha1.TriggerSpec{Keywords: kws, CaseSensitive: tc.caseSensitive})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			hits := 0
			for b.Loop() {
				hits = len(m.Match(text))
			}
			b.ReportMetric(float64(hits), "hits/op")
		})
	}
	b.Run("fold-only", func(b *testing.B) {
		var f folded
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			f.fold(text)
		}
	})
	b.Run("baseline-bytes.Contains-1-keyword", func(b *testing.B) {
		hay, needle := []byte(text), []byte("deadlock")
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if bytes.Contains(hay, needle) != strings.Contains(text, "deadlock") {
				b.Fatal("disagree")
			}
		}
	})
}
