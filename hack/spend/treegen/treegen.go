package treegen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Options shape a generated tree.
type Options struct {
	// Seed makes the tree reproducible.
	Seed uint64
	// Bytes is the approximate size to write per harness.
	Bytes int64
	// BigContent is the mean size of a large tool result or message body.
	BigContent int
	// Start is the first day of activity; sessions spread over Days days.
	Start time.Time
	Days  int
}

func (o *Options) defaults() {
	if o.BigContent == 0 {
		o.BigContent = 24 << 10
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2025, 11, 1, 0, 0, 0, 0, time.UTC)
	}
	if o.Days == 0 {
		o.Days = 7
	}
}

// textPool is pre-generated content to slice from.
type textPool struct {
	buf string
}

func newPool(r *rand.Rand) *textPool {
	words := []string{"func", "main()", "{", "}", "if", "err", "!=", "nil", "return", "fmt.Errorf(\"wrap: %w\", err)",
		"the", "quick", "brown", "fox", "\"quoted\"", "path/to/file.go:42", "\\n", "\t", "usage", "type",
		"input_tokens", "assistant", "{\"type\":\"user\"}", "λ", "日本語", "SELECT * FROM t;", "</div>", "\\\\"}
	var b strings.Builder
	for b.Len() < 4<<20 {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(12) == 0 {
			b.WriteString("\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return &textPool{buf: b.String()}
}

// text returns about n bytes of content as a JSON string literal (with quotes).
func (p *textPool) text(r *rand.Rand, n int) string {
	if n > len(p.buf)/2 {
		n = len(p.buf) / 2
	}
	start := r.IntN(len(p.buf) - n)
	s := strings.ToValidUTF8(p.buf[start:start+n], "")
	b, _ := json.Marshal(s)
	return string(b)
}

type writer struct {
	f       *os.File
	w       *bufio.Writer
	written int64
}

func create(path string) (*writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("treegen: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("treegen: %w", err)
	}
	return &writer{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (w *writer) line(s string) {
	n, _ := w.w.WriteString(s)
	_ = w.w.WriteByte('\n')
	w.written += int64(n) + 1
}

func (w *writer) close() error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("treegen: %w", err)
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("treegen: %w", err)
	}
	return nil
}

func uuid(r *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint32()&0xffff,
		r.Uint64()&0xffffffffffff)
}

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
