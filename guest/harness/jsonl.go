package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// MaxJSONLLine is the longest line ScanJSONL accepts; a longer one fails the
// scan (a CLI's store line holding a whole pasted file is still far below it).
const MaxJSONLLine = 64 << 20

// ScanJSONL reads a JSON-lines store: it decodes each line of r that is not
// blank into a fresh T and calls fn with it and the raw line (which is valid
// only during the call). Lines are counted from 1, blank ones included; a
// final line without its newline is read like the others, and a trailing CR
// is dropped. A line that is not a JSON T, or an error from fn, stops the scan
// with "<what> line <n>: <err>"; a line longer than MaxJSONLLine or a read
// error stops it with "read <what>: <err>". Whatever fn collected before the
// failing line is the caller's to keep.
func ScanJSONL[T any](r io.Reader, what string, fn func(v T, line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxJSONLLine)
	for n := 1; sc.Scan(); n++ {
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("%s line %d: %w", what, n, err)
		}
		if err := fn(v, b); err != nil {
			return fmt.Errorf("%s line %d: %w", what, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	return nil
}
