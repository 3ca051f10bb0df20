package convapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/convapi/wire"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// transcript is GET …/conversations/{name}/transcript?from=CURSOR&limit=N: a
// page of the attributed transcript, or with ?before=CURSOR the page that
// ends just before CURSOR (0: the last entries), or with ?follow=true an
// NDJSON stream of entries (backlog from the cursor, then live) that a client
// resumes from one past the last cursor it saw. Transcripts stay readable in
// every state.
func (a *API) transcript(w http.ResponseWriter, r *http.Request) {
	t, ok := a.resolve(w, r, http.MethodGet, conversationsPlural)
	if !ok {
		return
	}
	if a.opts.Transcripts == nil {
		apiserver.WriteError(w, apierrors.NewServiceUnavailable("this supervisor serves no transcripts"))
		return
	}
	q := r.URL.Query()
	from, err := queryInt(q.Get("from"), 1, 0, 1<<62, "from")
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	from = max(from, 1)
	follow := q.Get("follow")
	if follow != "" && follow != "true" && follow != "false" {
		apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("follow %q: use true or false", follow)))
		return
	}
	uid := string(t.obj.GetUID())
	if follow == "true" {
		a.followTranscript(w, r, uid, from)
		return
	}
	limit, err := queryInt(q.Get("limit"), wire.DefaultTranscriptLimit, 1, wire.MaxTranscriptLimit, "limit")
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	var page wire.TranscriptPage
	if raw := q.Get("before"); raw != "" {
		if q.Get("from") != "" {
			apiserver.WriteError(w, apierrors.NewBadRequest("from and before exclude each other: page forward with from, backward with before"))
			return
		}
		before, err := queryInt(raw, 0, 0, 1<<62, "before")
		if err != nil {
			apiserver.WriteError(w, err)
			return
		}
		page, err = a.transcriptBefore(r, uid, before, limit)
		if err != nil {
			apiserver.WriteError(w, fmt.Errorf("reading the transcript of conversation %s: %w", t.name, err))
			return
		}
	} else {
		items, err := a.opts.Transcripts.Read(r.Context(), uid, from, int(limit))
		if err != nil {
			apiserver.WriteError(w, fmt.Errorf("reading the transcript of conversation %s: %w", t.name, err))
			return
		}
		page = wire.TranscriptPage{Items: items, NextCursor: from}
		if n := len(items); n > 0 {
			page.NextCursor = items[n-1].Cursor + 1
		}
	}
	if page.Items == nil {
		page.Items = []transcriptwire.Entry{}
	}
	apiserver.WriteJSON(w, http.StatusOK, page)
}

// transcriptBefore reads the up to limit entries just before cursor before
// (0: past the last entry). Cursors are dense from 1, so the page starts at
// before-limit; PrevCursor is its first cursor while older entries exist.
func (a *API) transcriptBefore(r *http.Request, uid string, before, limit int64) (wire.TranscriptPage, error) {
	last, err := a.opts.Transcripts.Last(r.Context(), uid)
	if err != nil {
		return wire.TranscriptPage{}, err
	}
	if before == 0 || before > last+1 {
		before = last + 1
	}
	from := max(before-limit, 1)
	page := wire.TranscriptPage{NextCursor: before}
	if before <= 1 {
		return page, nil
	}
	items, err := a.opts.Transcripts.Read(r.Context(), uid, from, int(before-from))
	if err != nil {
		return wire.TranscriptPage{}, err
	}
	page.Items = items
	if len(items) > 0 {
		page.NextCursor = items[len(items)-1].Cursor + 1
		if first := items[0].Cursor; first > 1 {
			page.PrevCursor = first
		}
	}
	return page, nil
}

// followTranscript streams entries as NDJSON until the client goes away or
// the subscription ends. Entries at or below a cursor already sent are
// dropped, so a subscription that repeats itself never duplicates a line.
func (a *API) followTranscript(w http.ResponseWriter, r *http.Request, uid string, from int64) {
	ctx := r.Context()
	ch, err := a.opts.Transcripts.Subscribe(ctx, uid, from)
	if err != nil {
		apiserver.WriteError(w, fmt.Errorf("subscribing to the transcript: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	enc := json.NewEncoder(w)
	next := from
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-ch:
			if !ok {
				return
			}
			if e.Cursor < next {
				continue
			}
			if err := enc.Encode(e); err != nil {
				return
			}
			next = e.Cursor + 1
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
}

// queryInt parses an integer query parameter within [lo, hi], def when absent.
func queryInt(raw string, def, lo, hi int64, name string) (int64, error) {
	if raw == "" {
		return def, nil
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("%s %q: want an integer from %d to %d", name, raw, lo, hi))
	}
	return v, nil
}
