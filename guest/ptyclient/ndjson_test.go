package ptyclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/ptyclient"
	"aicli.dev/aicli/guest/server"
)

// TestFollowTranscriptSkipsAHugeEntry: a guest (in a container the supervisor does not trust) that sends a 100 MiB
// transcript entry costs the host O(MaxStreamLine) memory; the entry is skipped and the stream goes on.
func TestFollowTranscriptSkipsAHugeEntry(t *testing.T) {
	entry := func(id string) []byte {
		b, _ := json.Marshal(ptyapi.TranscriptEntry{ID: id, Role: ptyapi.RoleAssistant, Text: "hello " + id})
		return append(b, '\n')
	}
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != server.PathTranscript {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = w.Write(entry("1"))
		_, _ = w.Write([]byte(`{"id":"huge","role":"assistant","text":"`)) // a valid entry of 100 MiB
		for range 100 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte("\"}\n"))
		_, _ = w.Write(entry("3"))
	}))
	defer srv.Close()
	var got []string
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := ptyclient.New(srv.Client(), srv.URL).FollowTranscript(context.Background(), func(e ptyapi.TranscriptEntry) error {
		got = append(got, e.ID)
		return nil
	})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "1" || got[1] != "3" {
		t.Fatalf("entries %v, want [1 3]", got)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 4*ptyclient.MaxStreamLine {
		t.Fatalf("following allocated %d MiB, want at most %d MiB", n>>20, 4*ptyclient.MaxStreamLine>>20)
	}
}
