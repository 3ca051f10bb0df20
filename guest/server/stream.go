package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"aicli.dev/aicli/guest/ptyapi"
)

// Output coalescing of the raw stream: a chunk read within burstGap of the
// previous write, when either holds at least burstMinBytes, continues a
// burst, and the stream then lets output gather into one large frame (up
// to streamChunkBytes), for at most burstWait and only while the CLI keeps
// writing (no new output for burstQuiet ends the wait), so a fast-scrolling
// CLI costs few large frames instead of one per PTY read, and the tail of a
// burst is not held back for long. Small output (an echo, a spinner frame,
// a status line) and the first chunk after a quiet moment are written at
// once.
const (
	burstGap         = 2 * time.Millisecond
	burstWait        = 2 * time.Millisecond
	burstQuiet       = 500 * time.Microsecond
	burstMinBytes    = 1 << 10
	streamChunkBytes = 64 << 10
)

// inBurst says whether a chunk of n bytes read since after the previous
// write of lastN bytes continues a burst.
func inBurst(n, lastN int, since time.Duration) bool {
	return n > 0 && since < burstGap && max(n, lastN) >= burstMinBytes
}

// burstReader is a stream that can gather the rest of a burst (ptyhost's
// subscriber).
type burstReader interface {
	// ReadBurst copies queued output into p, waiting while more keeps
	// arriving: until p is full, no output came for quiet, or max passed.
	ReadBurst(p []byte, quiet, max time.Duration) int
}

// streamHead is the response head of the raw stream: chunked, with the
// TrailerStreamError trailer, and the connection closed after it.
const streamHead = "HTTP/1.1 200 OK\r\n" +
	"Content-Type: application/octet-stream\r\n" +
	"Cache-Control: no-store\r\n" +
	"Trailer: " + TrailerStreamError + "\r\n" +
	"Transfer-Encoding: chunked\r\n" +
	"Connection: close\r\n\r\n"

// sizeRoom is the room kept before a chunk's bytes for its size line (at
// most 5 hex digits for streamChunkBytes, then CRLF).
const sizeRoom = 8

// stream sends the raw PTY bytes as a chunked HTTP/1.1 response that it
// writes itself on the hijacked connection, one write per chunk (size line,
// bytes, CRLF): through net/http's 4 KiB response buffer every chunk took
// three writes, and so three side-channel frames, each waking the reading
// end. A stream cut short ends with the TrailerStreamError trailer.
func (s *srv) stream(w http.ResponseWriter, r *http.Request) {
	// Once hijacked, the request's context no longer ends when the client
	// hangs up; the read below notices that instead.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	rc, err := s.p.Subscribe(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer rc.Close()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.fail(w, r, ptyapi.Errorf(ptyapi.ErrInternal, "the stream needs an HTTP/1.1 connection: %v", err))
		return
	}
	defer conn.Close()
	go func() {
		// The client sends nothing after its request: this returns when it
		// hangs up (or when the stream is over and conn is closed).
		_, _ = io.Copy(io.Discard, brw.Reader)
		cancel()
	}()
	if _, err := io.WriteString(conn, streamHead); err != nil {
		return
	}
	burst, _ := rc.(burstReader)
	buf := make([]byte, sizeRoom+streamChunkBytes+2)
	data := buf[sizeRoom : sizeRoom+streamChunkBytes]
	var lastWrite time.Time
	lastN := 0
	for {
		n, rerr := rc.Read(data)
		if rerr == nil && burst != nil && n < len(data) && inBurst(n, lastN, time.Since(lastWrite)) {
			n += burst.ReadBurst(data[n:], burstQuiet, burstWait)
		}
		if n > 0 {
			if _, err := conn.Write(chunk(buf, n)); err != nil {
				return
			}
			lastWrite, lastN = time.Now(), n
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				s.log.Info("pty stream cut", "err", rerr)
			}
			_, _ = io.WriteString(conn, lastChunk(rerr))
			return
		}
	}
}

// chunk frames the n bytes at buf[sizeRoom:] as one HTTP chunk, in place:
// its size line goes just before them and CRLF after (buf has room for
// both).
func chunk(buf []byte, n int) []byte {
	var line [sizeRoom]byte
	size := append(strconv.AppendUint(line[:0], uint64(n), 16), '\r', '\n')
	start := sizeRoom - len(size)
	copy(buf[start:], size)
	return append(buf[start:sizeRoom+n], '\r', '\n')
}

// lastChunk ends a chunked stream that ended with err, naming the error's
// code in the trailer unless it is a clean end.
func lastChunk(err error) string {
	if errors.Is(err, io.EOF) {
		return "0\r\n\r\n"
	}
	return "0\r\n" + TrailerStreamError + ": " + string(ptyapi.CodeOf(err)) + "\r\n\r\n"
}
