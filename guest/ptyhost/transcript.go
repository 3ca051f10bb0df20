package ptyhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"aicli.dev/aicli/guest/ptyapi"
)

// TranscriptPoll is how often FollowTranscript looks for new lines in the
// CLI's native session store.
const TranscriptPoll = 50 * time.Millisecond

var _ ptyapi.TranscriptFollower = (*Host)(nil)

// FollowTranscript implements ptyapi.TranscriptFollower: it parses the CLI's
// native session store with the harness adapter, calls fn for every entry
// from the start of the current session, then for each new one as the CLI
// appends it, switching files when the session id changes (discovery or a
// resume). Only complete lines are parsed. A follow begun before Start waits
// for the CLI. After the CLI exits the store is read one last time and the
// call waits for ctx. It returns ctx's error, fn's error, or a read error.
func (h *Host) FollowTranscript(ctx context.Context, fn func(ptyapi.TranscriptEntry) error) error {
	select {
	case <-h.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	var (
		sid     string
		path    string
		offset  int64
		partial []byte
	)
	t := time.NewTicker(TranscriptPoll)
	defer t.Stop()
	for {
		h.mu.Lock()
		cur, exited := h.sessionID, h.state == stateExited
		h.mu.Unlock()
		if cur != "" && cur != sid {
			p, err := h.adapter.SessionFile(h.opts.Home, h.workDir, cur)
			if err != nil {
				return fmt.Errorf("follow transcript: %w", err)
			}
			sid, path, offset, partial = cur, p, 0, nil
		}
		if path != "" {
			var err error
			offset, partial, err = h.readTranscript(path, offset, partial, fn)
			if err != nil {
				return err
			}
		}
		if exited {
			// Everything the CLI wrote has been read; nothing more will come.
			<-ctx.Done()
			return ctx.Err()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-h.done:
		}
	}
}

// readTranscript parses the complete lines appended to path since offset and
// hands their entries to fn; it returns the new offset and any incomplete tail.
func (h *Host) readTranscript(path string, offset int64, partial []byte,
	fn func(ptyapi.TranscriptEntry) error) (int64, []byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return offset, partial, nil // the CLI has not written this session yet
	}
	if err != nil {
		return offset, partial, fmt.Errorf("follow transcript: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() < offset {
		// Truncated or replaced: start over (fn's caller dedupes by entry id).
		offset, partial = 0, nil
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, partial, fmt.Errorf("follow transcript: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, 64<<20))
	if err != nil {
		return offset, partial, fmt.Errorf("follow transcript: %w", err)
	}
	offset += int64(len(data))
	buf := append(partial, data...)
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return offset, buf, nil
	}
	complete, rest := buf[:end+1], append([]byte(nil), buf[end+1:]...)
	// Line by line, so one malformed line costs only itself.
	for _, line := range bytes.SplitAfter(complete, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		entries, err := h.adapter.ParseTranscript(bytes.NewReader(line))
		if err != nil {
			h.log.Warn("skipping an unparseable transcript line", "file", path, "bytes", len(line), "err", err)
			continue
		}
		for _, e := range entries {
			if err := fn(e.TranscriptEntry); err != nil {
				return offset, rest, err
			}
		}
	}
	return offset, rest, nil
}
