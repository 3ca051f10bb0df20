package convapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/convapi/convapitest"
	"aicli.dev/aicli/internal/convapi/wire"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

func transcriptPath(name, query string) string {
	return convapitest.Path("conversations", "default", name, wire.SubTranscript) + query
}

func readPage(t *testing.T, env *convapitest.Env, name, query string) wire.TranscriptPage {
	t.Helper()
	code, body := env.Do(t, http.MethodGet, transcriptPath(name, query), "", nil)
	if code != http.StatusOK {
		t.Fatalf("transcript%s: HTTP %d: %s", query, code, body)
	}
	var p wire.TranscriptPage
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return p
}

func cursors(es []transcriptwire.Entry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Cursor
	}
	return out
}

func TestTranscriptRead(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	// Archived: the transcript stays readable after the conversation ends.
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationArchived)
	uid := env.UID(t, "default", "c1")
	for i := 1; i <= 7; i++ {
		speaker := transcriptwire.SpeakerHuman
		if i%2 == 0 {
			speaker = transcriptwire.SpeakerAgent
		}
		env.Transcripts.Append(uid, speaker, fmt.Sprintf("line %d", i))
	}

	all := readPage(t, env, "c1", "")
	if fmt.Sprint(cursors(all.Items)) != "[1 2 3 4 5 6 7]" || all.NextCursor != 8 {
		t.Fatalf("full read = %v next %d", cursors(all.Items), all.NextCursor)
	}
	if e := all.Items[1]; e.Speaker != "agent" || e.Text != "line 2" || e.Time.IsZero() {
		t.Errorf("entry 2 = %+v", e)
	}
	// Paging: follow nextCursor until an empty page.
	var got []int64
	from := int64(0)
	for range 10 {
		p := readPage(t, env, "c1", fmt.Sprintf("?from=%d&limit=3", from))
		if len(p.Items) == 0 {
			if p.NextCursor != from {
				t.Errorf("empty page moved the cursor from %d to %d", from, p.NextCursor)
			}
			break
		}
		got = append(got, cursors(p.Items)...)
		from = p.NextCursor
	}
	if fmt.Sprint(got) != "[1 2 3 4 5 6 7]" {
		t.Errorf("paged read = %v", got)
	}
	if p := readPage(t, env, "c1", "?from=6"); fmt.Sprint(cursors(p.Items)) != "[6 7]" {
		t.Errorf("from=6 = %v", cursors(p.Items))
	}
	if p := readPage(t, env, "c1", "?from=99"); p.Items == nil || len(p.Items) != 0 || p.NextCursor != 99 {
		t.Errorf("from past the end = %+v, want an empty (non-null) page at 99", p)
	}

	for _, q := range []string{"?from=-1", "?from=x", "?limit=0", "?limit=5001", "?follow=yes"} {
		code, body := env.Do(t, http.MethodGet, transcriptPath("c1", q), "", nil)
		wantStatus(t, code, body, http.StatusBadRequest)
	}
	code, body := env.Do(t, http.MethodGet, transcriptPath("ghost", ""), "", nil)
	wantStatus(t, code, body, http.StatusNotFound, "ghost")
}

// follow streams NDJSON from a cursor; it returns a channel of decoded entries.
func follow(ctx context.Context, t *testing.T, env *convapitest.Env, name string, from int64) <-chan transcriptwire.Entry {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, env.URL+transcriptPath(name, fmt.Sprintf("?follow=true&from=%d", from)), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("follow: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := make(chan transcriptwire.Entry)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var e transcriptwire.Entry
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("bad NDJSON line %q: %v", sc.Text(), err)
				return
			}
			select {
			case ch <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

func next(t *testing.T, ch <-chan transcriptwire.Entry) (transcriptwire.Entry, bool) {
	t.Helper()
	select {
	case e, ok := <-ch:
		return e, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no transcript entry within 10s")
		return transcriptwire.Entry{}, false
	}
}

func TestTranscriptFollowResumesFromCursor(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)
	uid := env.UID(t, "default", "c1")
	for i := 1; i <= 3; i++ {
		env.Transcripts.Append(uid, "human", fmt.Sprintf("m%d", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// Backlog from cursor 2, then a live entry.
	ch := follow(ctx, t, env, "c1", 2)
	for _, want := range []int64{2, 3} {
		if e, ok := next(t, ch); !ok || e.Cursor != want {
			t.Fatalf("backlog entry = %+v (open %v), want cursor %d", e, ok, want)
		}
	}
	env.Transcripts.Append(uid, "agent", "live 4")
	if e, ok := next(t, ch); !ok || e.Cursor != 4 || e.Text != "live 4" || e.Speaker != "agent" {
		t.Fatalf("live entry = %+v", e)
	}

	// The server ends streams (here after two entries); a client resumes
	// from one past the last cursor it saw and misses nothing.
	env.Transcripts.CutSubscriptionsAfter(2)
	for i := 5; i <= 9; i++ {
		env.Transcripts.Append(uid, "agent", fmt.Sprintf("m%d", i))
	}
	var seen []int64
	from := int64(4)
	for len(seen) < 6 {
		s := follow(ctx, t, env, "c1", from)
		for {
			e, ok := next(t, s)
			if !ok {
				break
			}
			seen = append(seen, e.Cursor)
			from = e.Cursor + 1
		}
	}
	if fmt.Sprint(seen) != "[4 5 6 7 8 9]" {
		t.Errorf("resumed cursors = %v, want 4..9 exactly once each, in order", seen)
	}
	if n := env.Transcripts.Subscriptions(); n != 4 {
		t.Errorf("%d subscriptions, want 4 (one live, three resumed)", n)
	}
}

func TestTranscriptWithoutStoreIs503(t *testing.T) {
	env := convapitest.Start(t, convapitest.WithoutTranscripts())
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)
	code, body := env.Do(t, http.MethodGet, transcriptPath("c1", ""), "", nil)
	wantStatus(t, code, body, http.StatusServiceUnavailable, "no transcripts")
}
