package tools

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"aicli.dev/aicli/guest/toolwire"
)

// errOutputLimit is the cause of a call cut at toolwire.MaxOutput.
var errOutputLimit = errors.New("output limit reached")

// sink frames a call's stdout and stderr onto the stream: scrubbed, at most limit bytes in all (then the output
// is truncated, a note goes to stderr and overflow runs once), safe for the backend's two copying goroutines.
type sink struct {
	mu       sync.Mutex
	w        io.Writer
	scrub    [2]*scrubber // stdout, stderr
	limit    int64
	sent     int64
	full     bool
	err      error // the stream failed: the caller is gone
	overflow func()
}

func newSink(w io.Writer, secrets map[string][]byte, limit int64, overflow func()) *sink {
	return &sink{w: w, scrub: [2]*scrubber{newScrubber(secrets), newScrubber(secrets)}, limit: limit, overflow: overflow}
}

// Stdout and Stderr are the backend's writers.
func (s *sink) Stdout() io.Writer { return sinkWriter{s, toolwire.TypeStdout} }
func (s *sink) Stderr() io.Writer { return sinkWriter{s, toolwire.TypeStderr} }

type sinkWriter struct {
	s *sink
	t toolwire.Type
}

func (w sinkWriter) Write(p []byte) (int, error) { return w.s.write(w.t, p) }

func index(t toolwire.Type) int {
	if t == toolwire.TypeStderr {
		return 1
	}
	return 0
}

func (s *sink) write(t toolwire.Type, p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	if s.full {
		return len(p), nil // dropped: the call is being stopped
	}
	s.send(t, s.scrub[index(t)].push(p))
	if s.err != nil {
		return 0, s.err
	}
	return len(p), nil
}

// send frames out, cutting it at the limit. Called with mu held.
func (s *sink) send(t toolwire.Type, out []byte) {
	if len(out) == 0 || s.err != nil || s.full {
		return
	}
	if room := s.limit - s.sent; int64(len(out)) > room {
		out = out[:room]
		s.full = true
	}
	if err := toolwire.WriteData(s.w, t, out); err != nil {
		s.err = err
		return
	}
	s.sent += int64(len(out))
	if s.full {
		s.note(fmt.Sprintf("aicli: output truncated at %d bytes: the call fails\n", s.limit))
		if s.overflow != nil {
			s.overflow()
		}
	}
}

// note writes a server message to the caller's stderr (not counted against the limit).
func (s *sink) note(msg string) {
	if s.err == nil {
		if err := toolwire.WriteData(s.w, toolwire.TypeStderr, []byte(msg)); err != nil {
			s.err = err
		}
	}
}

// flush sends what the scrubbers hold back. Call it once the backend has stopped writing.
func (s *sink) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.send(toolwire.TypeStdout, s.scrub[0].flush())
	s.send(toolwire.TypeStderr, s.scrub[1].flush())
}

// Sent is the number of output bytes sent; Full reports a truncation; Err a stream failure.
func (s *sink) Sent() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

func (s *sink) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
