package tools

import (
	"errors"
	"fmt"
	"io"

	"aicli.dev/aicli/guest/toolwire"
)

// Causes that end a call early.
var (
	errCallerGone = errors.New("the caller went away")
	errStdinLimit = fmt.Errorf("standard input exceeds %d bytes", toolwire.MaxStdin)
	errBadFrame   = errors.New("unexpected frame from the caller")
)

// pumpStdin reads the caller's Stdin frames into w until StdinEOF (then closes w), and keeps reading after that so
// the caller's going away is noticed; every early end calls stop with its cause. It returns the stdin bytes read
// once the stream's reads fail (the server pins the read deadline in the past when the call is over).
func pumpStdin(r io.Reader, w *io.PipeWriter, stop func(error)) int64 {
	var n int64
	eof := false
	for {
		f, err := toolwire.ReadFrame(r)
		if err != nil {
			_ = w.CloseWithError(errCallerGone)
			stop(errCallerGone)
			return n
		}
		switch {
		case f.Type == toolwire.TypeStdin && !eof:
			n += int64(len(f.Payload))
			if n > toolwire.MaxStdin {
				_ = w.CloseWithError(errStdinLimit)
				stop(errStdinLimit)
				return n
			}
			if _, err := w.Write(f.Payload); err != nil {
				eof = true // the backend stopped reading: drop the rest, keep watching the stream
			}
		case f.Type == toolwire.TypeStdin:
			n += int64(len(f.Payload))
		case f.Type == toolwire.TypeStdinEOF && !eof:
			eof = true
			_ = w.Close()
		default:
			_ = w.CloseWithError(errBadFrame)
			stop(fmt.Errorf("%w: %s", errBadFrame, f.Type))
			return n
		}
	}
}
