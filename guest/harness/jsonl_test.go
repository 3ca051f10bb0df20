package harness

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

type jsonlRec struct {
	N int    `json:"n"`
	S string `json:"s"`
}

// scanAll collects what ScanJSONL hands fn: the decoded values and raw lines.
func scanAll(t *testing.T, r io.Reader) ([]jsonlRec, []string, error) {
	t.Helper()
	var vs []jsonlRec
	var raws []string
	err := ScanJSONL(r, "test store", func(v jsonlRec, line []byte) error {
		vs = append(vs, v)
		raws = append(raws, string(line))
		return nil
	})
	return vs, raws, err
}

func TestScanJSONLSkipsBlankLinesAndReadsAnUnterminatedLast(t *testing.T) {
	in := "{\"n\":1}\n\n   \t\n{\"n\":2}\r\n{\"n\":3}"
	vs, raws, err := scanAll(t, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || vs[0].N != 1 || vs[1].N != 2 || vs[2].N != 3 {
		t.Fatalf("values %+v", vs)
	}
	if raws[1] != `{"n":2}` {
		t.Errorf("raw line with CRLF: %q, want the CR dropped", raws[1])
	}
	if vs, _, err := scanAll(t, strings.NewReader("")); err != nil || len(vs) != 0 {
		t.Errorf("empty input: %v %v", vs, err)
	}
}

func TestScanJSONLStopsAtAMalformedLineWithItsNumber(t *testing.T) {
	for name, tc := range map[string]struct {
		in   string
		want string
		kept int
	}{
		"not json":                {"{\"n\":1}\n\n{not json\n{\"n\":4}\n", "test store line 3: ", 1},
		"partial line at the end": {"{\"n\":1}\n{\"n\":2}\n{\"n\":", "test store line 3: unexpected end of JSON input", 2},
		"wrong type":              {"{\"n\":\"one\"}\n", "test store line 1: json: cannot unmarshal", 0},
		"binary":                  {"\x00\x01garbage", "test store line 1: ", 0},
	} {
		t.Run(name, func(t *testing.T) {
			vs, _, err := scanAll(t, strings.NewReader(tc.in))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want prefix %q", err, tc.want)
			}
			if len(vs) != tc.kept {
				t.Errorf("%d values before the error, want %d", len(vs), tc.kept)
			}
		})
	}
}

func TestScanJSONLReadsLongLinesUpToTheLimit(t *testing.T) {
	long := strings.Repeat("x", 3<<20) // past the scanner's initial 64 KiB buffer
	vs, _, err := scanAll(t, strings.NewReader("{\"n\":1}\n{\"n\":2,\"s\":\""+long+"\"}\n{\"n\":3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || len(vs[1].S) != len(long) {
		t.Fatalf("%d values, long value %d bytes", len(vs), len(vs[1].S))
	}

	tooLong := io.MultiReader(strings.NewReader("{\"n\":1}\n{\"s\":\""), endless('x'))
	vs, _, err = scanAll(t, io.LimitReader(tooLong, MaxJSONLLine+1<<20))
	if !errors.Is(err, bufio.ErrTooLong) || !strings.HasPrefix(err.Error(), "read test store: ") {
		t.Fatalf("line past MaxJSONLLine: %v", err)
	}
	if len(vs) != 1 {
		t.Errorf("%d values before the over-long line, want 1", len(vs))
	}
}

func TestScanJSONLWrapsTheCallbacksError(t *testing.T) {
	stop := errors.New("stop here")
	n := 0
	err := ScanJSONL(strings.NewReader("{}\n{}\n{}\n"), "test store", func(jsonlRec, []byte) error {
		if n++; n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || err.Error() != "test store line 2: stop here" || n != 2 {
		t.Fatalf("error %v after %d calls", err, n)
	}
}

// endless reads as an unending run of b.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}
