package ptyhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"aicli.dev/aicli/guest/harness"
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
// resume). Only complete lines are parsed. While the session's file does not
// exist yet its path is resolved again on every poll (a CLI may name the file
// after the minute it first writes it). A follow begun before Start waits
// for the CLI. After the CLI exits the store is read one last time and the
// call waits for ctx. It returns ctx's error, fn's error, or a read error.
//
// An adapter that implements harness.StoreFollower (a CLI whose store is not
// a line-based file, e.g. OpenCode's SQLite database) is followed through
// FollowStore instead, with the host's current session id asked on every poll.
func (h *Host) FollowTranscript(ctx context.Context, fn func(ptyapi.TranscriptEntry) error) error {
	select {
	case <-h.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	if sf, ok := h.adapter.(harness.StoreFollower); ok {
		return h.followStore(ctx, sf, fn)
	}
	var (
		sid     string
		path    string
		missing bool
		offset  int64
		partial []byte
	)
	t := time.NewTicker(TranscriptPoll)
	defer t.Stop()
	for {
		h.mu.Lock()
		cur, exited := h.sessionID, h.state == stateExited
		h.mu.Unlock()
		if cur != "" && (cur != sid || missing) {
			p, err := h.adapter.SessionFile(h.opts.Home, h.workDir, cur)
			if err != nil {
				return fmt.Errorf("follow transcript: %w", err)
			}
			if cur != sid || p != path {
				sid, path, offset, partial = cur, p, 0, nil
			}
		}
		if path != "" {
			var err error
			offset, partial, missing, err = h.readTranscript(path, offset, partial, fn)
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

// followStore follows the transcript through the adapter's own store
// follower; fn's error is returned unwrapped, others are wrapped.
func (h *Host) followStore(ctx context.Context, sf harness.StoreFollower, fn func(ptyapi.TranscriptEntry) error) error {
	current := func() string {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.sessionID
	}
	var fnErr error
	err := sf.FollowStore(ctx, h.opts.Home, h.workDir, current, func(e ptyapi.TranscriptEntry) error {
		fnErr = fn(e)
		return fnErr
	})
	switch {
	case err == nil, fnErr != nil && errors.Is(err, fnErr), ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return err
	}
	return fmt.Errorf("follow transcript: %w", err)
}

// readTranscript parses the complete lines appended to path since offset and
// hands their entries to fn; it returns the new offset, any incomplete tail
// and whether the file does not exist (yet).
func (h *Host) readTranscript(path string, offset int64, partial []byte,
	fn func(ptyapi.TranscriptEntry) error) (int64, []byte, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return offset, partial, true, nil // the CLI has not written this session yet
	}
	if err != nil {
		return offset, partial, false, fmt.Errorf("follow transcript: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() < offset {
		// Truncated or replaced: start over (fn's caller dedupes by entry id).
		offset, partial = 0, nil
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, partial, false, fmt.Errorf("follow transcript: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, 64<<20))
	if err != nil {
		return offset, partial, false, fmt.Errorf("follow transcript: %w", err)
	}
	offset += int64(len(data))
	buf := append(partial, data...)
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return offset, buf, false, nil
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
				return offset, rest, false, err
			}
		}
	}
	return offset, rest, false, nil
}
