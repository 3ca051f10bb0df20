package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"aicli.dev/aicli/internal/convapi/wire"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// TranscriptPage reads up to limit entries of conversation namespace/name's
// attributed transcript with Cursor >= from (GET …/transcript).
func (c *Client) TranscriptPage(ctx context.Context, namespace, name string, from int64, limit int) (*wire.TranscriptPage, error) {
	path := ResourcePath(conversations, namespace, name, wire.SubTranscript)
	return c.transcriptPage(ctx, name, fmt.Sprintf("%s?from=%d&limit=%d", path, max(from, 1), limit))
}

// TranscriptBefore reads the up to limit entries of conversation
// namespace/name just before cursor before, oldest first; before 0 reads the
// last entries (GET …/transcript?before=). The page's PrevCursor is the
// before of the next older page, 0 once the first entry was read; its
// NextCursor is where a follow picks up.
func (c *Client) TranscriptBefore(ctx context.Context, namespace, name string, before int64, limit int) (*wire.TranscriptPage, error) {
	path := ResourcePath(conversations, namespace, name, wire.SubTranscript)
	return c.transcriptPage(ctx, name, fmt.Sprintf("%s?before=%d&limit=%d", path, max(before, 0), limit))
}

func (c *Client) transcriptPage(ctx context.Context, name, path string) (*wire.TranscriptPage, error) {
	var page wire.TranscriptPage
	if err := c.getJSON(ctx, path, "the transcript of "+name, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// FollowTranscript calls fn with every entry of conversation namespace/name
// with Cursor >= from, oldest first and each once, as the server commits
// them (GET …/transcript?follow=true, NDJSON). When the stream ends or is
// cut it reconnects, spaced by Backoff, from one past the last entry fn
// took. A request that fails (the server unreachable, a Status error) ends
// the follow with that error unless retry (when not nil) says to go on. It
// returns nil when ctx ends, and fn's error when fn fails.
func (c *Client) FollowTranscript(ctx context.Context, namespace, name string, from int64,
	fn func(transcriptwire.Entry) error, retry func(error) bool) error {
	base := ResourcePath(conversations, namespace, name, wire.SubTranscript)
	next := max(from, 1)
	var backoff Backoff
	for {
		progressed, err := c.followStream(ctx, base, &next, fn)
		if ctx.Err() != nil {
			return nil
		}
		var fnErr *followFnError
		if errors.As(err, &fnErr) {
			return fnErr.err
		}
		if err != nil && (retry == nil || !retry(err)) {
			return err
		}
		if progressed {
			backoff.Reset()
		}
		if !backoff.Wait(ctx) {
			return nil
		}
	}
}

// followFnError carries the error of FollowTranscript's fn out of a stream.
type followFnError struct{ err error }

func (e *followFnError) Error() string { return e.err.Error() }

// followStream reads one follow stream until it ends, advancing *next past
// every entry fn took, so that the next stream resumes right after it.
func (c *Client) followStream(ctx context.Context, base string, next *int64, fn func(transcriptwire.Entry) error) (bool, error) {
	resp, err := c.Do(ctx, http.MethodGet, fmt.Sprintf("%s?follow=true&from=%d", base, *next), "", nil)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	progressed := false
	for {
		var e transcriptwire.Entry
		if err := dec.Decode(&e); err != nil {
			var syntaxErr *json.SyntaxError
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
				return progressed, fmt.Errorf("decoding the transcript stream: %w", err)
			}
			return progressed, nil // the stream ended or was cut: resume
		}
		if e.Cursor < *next {
			continue
		}
		if err := fn(e); err != nil {
			return progressed, &followFnError{err: err}
		}
		*next, progressed = e.Cursor+1, true
	}
}
