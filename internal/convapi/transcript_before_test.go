package convapi_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/convapi/convapitest"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// A 10k-entry transcript in the durable log reads from its end, page by page
// backwards, through the client: each page is the entries just before the
// previous one's first, and the pages together are the whole transcript once.
func TestTranscriptBeforePagesBackFromTheEnd(t *testing.T) {
	const n = 10_000
	env := convapitest.Start(t, convapitest.WithStoreTranscripts())
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationArchived)
	env.CreateConversation(t, "default", "empty", "coder", v1alpha1.ConversationArchived)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	entries := make([]transcriptwire.Entry, n)
	for i := range entries {
		entries[i] = transcriptwire.Entry{Speaker: transcriptwire.SpeakerAgent, Text: fmt.Sprintf("line %d", i+1), Time: time.Now()}
	}
	if _, err := env.Log.Append(ctx, env.UID(t, "default", "c1"), entries); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Server: env.URL})
	if err != nil {
		t.Fatal(err)
	}

	last, err := c.TranscriptBefore(ctx, "default", "c1", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := cursors(last.Items); len(got) != 100 || got[0] != n-99 || got[99] != n || last.Items[99].Text != "line 10000" {
		t.Fatalf("last page: %d items, first %v", len(got), got[:min(len(got), 3)])
	}
	if last.PrevCursor != n-99 || last.NextCursor != n+1 {
		t.Fatalf("last page cursors: prev %d next %d", last.PrevCursor, last.NextCursor)
	}

	var all []int64
	pages := 0
	for before := int64(0); ; pages++ {
		p, err := c.TranscriptBefore(ctx, "default", "c1", before, 700)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) == 0 || len(p.Items) > 700 {
			t.Fatalf("page before %d: %d items", before, len(p.Items))
		}
		all = append(cursors(p.Items), all...)
		if p.PrevCursor == 0 {
			break
		}
		before = p.PrevCursor
	}
	if pages != n/700 || len(all) != n || !slices.IsSorted(all) || all[0] != 1 || all[n-1] != n {
		t.Fatalf("paged back %d pages, %d cursors from %d to %d", pages+1, len(all), all[0], all[len(all)-1])
	}

	head, err := c.TranscriptBefore(ctx, "default", "c1", 5, 10)
	if err != nil || fmt.Sprint(cursors(head.Items)) != "[1 2 3 4]" || head.PrevCursor != 0 || head.NextCursor != 5 {
		t.Fatalf("before 5: %+v %v", head, err)
	}
	past, err := c.TranscriptBefore(ctx, "default", "c1", n+50, 2)
	if err != nil || fmt.Sprint(cursors(past.Items)) != "[9999 10000]" {
		t.Fatalf("before past the end: %+v %v", past, err)
	}
	empty, err := c.TranscriptBefore(ctx, "default", "empty", 0, 10)
	if err != nil || len(empty.Items) != 0 || empty.PrevCursor != 0 || empty.NextCursor != 1 {
		t.Fatalf("empty transcript: %+v %v", empty, err)
	}
}

func TestTranscriptBeforeBadInput(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationArchived)
	for q, want := range map[string]string{
		"?before=-1":        "before",
		"?before=x":         "before",
		"?before=3&from=1":  "exclude each other",
		"?before=3&limit=0": "limit",
	} {
		code, body := env.Do(t, http.MethodGet, transcriptPath("c1", q), "", nil)
		wantStatus(t, code, body, http.StatusBadRequest, want)
	}
}
