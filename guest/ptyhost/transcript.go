package ptyhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
		missing bool
		r       storeReader
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
			if cur != sid || p != r.path {
				sid, r = cur, storeReader{path: p}
			}
		}
		if r.path != "" {
			var fnErr, err error
			missing, _, err = r.read(h.adapter, h.log, func(e harness.TranscriptEntry) error {
				fnErr = fn(e.TranscriptEntry)
				return fnErr
			})
			switch {
			case fnErr != nil:
				return fnErr
			case err != nil:
				return fmt.Errorf("follow transcript: %w", err)
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

// storeReader reads a file-based native session store incrementally: the entries of the complete lines appended
// since the last read.
type storeReader struct {
	path    string
	offset  int64
	partial []byte
	// onRestart, when set, is called when the file was truncated or replaced and is read again from its start.
	onRestart func()
}

// read hands fn the entries of the complete lines appended to the file since the last read, in order. It reports
// whether the file does not exist (yet), and whether it was truncated or replaced since the last read, in which case
// it was read again from its start (fn's caller dedupes).
func (r *storeReader) read(a harness.Adapter, log *slog.Logger, fn func(harness.TranscriptEntry) error) (missing, restarted bool, err error) {
	f, err := os.Open(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return true, false, nil // the CLI has not written this session yet
	}
	if err != nil {
		return false, false, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() < r.offset {
		r.offset, r.partial, restarted = 0, nil, true
		if r.onRestart != nil {
			r.onRestart()
		}
	}
	if _, err := f.Seek(r.offset, io.SeekStart); err != nil {
		return false, restarted, err
	}
	data, err := io.ReadAll(io.LimitReader(f, 64<<20))
	if err != nil {
		return false, restarted, err
	}
	r.offset += int64(len(data))
	buf := append(r.partial, data...)
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		r.partial = buf
		return false, restarted, nil
	}
	complete := buf[:end+1]
	r.partial = append([]byte(nil), buf[end+1:]...)
	// Line by line, so one malformed line costs only itself.
	for _, line := range bytes.SplitAfter(complete, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		entries, err := a.ParseTranscript(bytes.NewReader(line))
		if err != nil {
			log.Warn("skipping an unparseable transcript line", "file", r.path, "bytes", len(line), "err", err)
			continue
		}
		for _, e := range entries {
			if err := fn(e); err != nil {
				return false, restarted, err
			}
		}
	}
	return false, restarted, nil
}
