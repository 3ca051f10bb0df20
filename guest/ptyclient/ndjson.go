package ptyclient

import (
	"bufio"
	"errors"
	"io"
)

// MaxStreamLine bounds one line (one value) of a guest's NDJSON stream (transcript entries, statuses) as the host
// reads it. The guest is inside the container the supervisor does not trust: a longer line is skipped up to its
// newline without being held, and the stream goes on, so a guest cannot make the host buffer without end.
const MaxStreamLine = 16 << 20

// lineReader returns the lines of r, each without its newline, skipping lines longer than max.
type lineReader struct {
	r    *bufio.Reader
	max  int
	line []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line (valid until the following call); a last line without a newline is returned too.
func (l *lineReader) next() ([]byte, error) {
	if cap(l.line) > 1<<20 {
		l.line = nil // do not keep a long line's buffer for the short ones after it
	}
	l.line = l.line[:0]
	skipping := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !skipping {
			// Without its newline (only a chunk read without error ends in one) the line may hold max bytes.
			if body := len(l.line) + len(chunk); body > l.max+1 || body > l.max && err != nil {
				skipping, l.line = true, l.line[:0]
			} else {
				if body > cap(l.line) { // double (append grows big slices by a quarter: five times the copying)
					nb := make([]byte, len(l.line), min(max(2*cap(l.line), body), l.max+1))
					copy(nb, l.line)
					l.line = nb
				}
				l.line = append(l.line, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			if errors.Is(err, io.EOF) && len(l.line) > 0 && !skipping {
				return l.line, nil
			}
			return nil, err
		case skipping: // the newline that ends the long line
			skipping = false
		default:
			return l.line[:len(l.line)-1], nil
		}
	}
}
