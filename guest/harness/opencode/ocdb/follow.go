package ocdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"aicli.dev/aicli/guest/harness"
)

// Follow follows an OpenCode session's transcript in the database at dbPath:
// it calls fn for every entry of the current session from its start, then
// for each new one as OpenCode commits it (a reply once it is complete),
// polling every interval. sessionID is asked on every poll, so a session that
// is discovered later, or replaced, is picked up; when it changes, following
// starts again from the new session's start. A database that does not exist
// yet is waited for. It returns ctx's error or fn's error; read errors of a
// poll are retried on the next one.
func Follow(ctx context.Context, dbPath string, sessionID func() string, interval time.Duration,
	fn func(harness.TranscriptEntry) error) error {
	var (
		cur  string
		seen map[string]bool
	)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if sid := sessionID(); sid != "" {
			if sid != cur {
				cur, seen = sid, map[string]bool{}
			}
			entries, err := poll(ctx, dbPath, cur)
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			for _, e := range entries {
				if seen[e.ID] {
					continue
				}
				seen[e.ID] = true
				if err := fn(e); err != nil {
					return err
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// poll dumps the finished part of a session and parses it.
func poll(ctx context.Context, dbPath, sessionID string) ([]harness.TranscriptEntry, error) {
	if _, err := os.Stat(dbPath); err != nil {
		return nil, fmt.Errorf("follow opencode session: %w", err)
	}
	d, err := Open(dbPath)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var buf bytes.Buffer
	if _, err := d.Dump(ctx, sessionID, &buf); err != nil && !errors.Is(err, ErrIncomplete) {
		return nil, err
	}
	return Parse(&buf)
}
