package ptyhost

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/fake"
	"aicli.dev/aicli/guest/harness/fake/sessionstore"
	"aicli.dev/aicli/guest/ptyapi"
)

// TestReadTranscriptSkipsALineWithoutEnd: the CLI writes its store, so a line may never end (`truncate -s` costs
// it no disk). The follow keeps at most harness.MaxJSONLLine of an incomplete line across polls, skips the long
// line, and the record after it arrives.
func TestReadTranscriptSkipsALineWithoutEnd(t *testing.T) {
	h := newHost(t, newEnv(t))
	h.adapter = fake.New(fake.Options{}) // what Start sets
	path := filepath.Join(t.TempDir(), "s.jsonl")
	rec := func(id string) []byte {
		b, err := json.Marshal(sessionstore.Record{Type: "user", UUID: id, SessionID: "s",
			Message: sessionstore.Message{Role: "user", Content: []sessionstore.Content{{Type: "text", Text: "text " + id}}}})
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fh.Write(rec("1"))
	_, _ = fh.Seek(3*harness.MaxJSONLLine, 1) // a hole: zeros, no newline
	_, _ = fh.Write(append([]byte("\n"), rec("2")...))
	_ = fh.Close()
	var tail storeTail
	var got []string
	for poll := 0; poll < 6; poll++ {
		if _, err := h.readTranscript(path, &tail, func(e ptyapi.TranscriptEntry) error {
			got = append(got, e.ID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(tail.partial) > harness.MaxJSONLLine {
			t.Fatalf("poll %d holds %d MiB of an incomplete line, want at most %d MiB", poll, len(tail.partial)>>20, harness.MaxJSONLLine>>20)
		}
	}
	if len(got) != 2 || got[0] != "1" || got[1] != "2" {
		t.Fatalf("entries %v, want [1 2]", got)
	}
}

// TestReadTranscriptRefusesAFIFO: a FIFO in place of the session file is an error, not a read that blocks until
// someone writes to it.
func TestReadTranscriptRefusesAFIFO(t *testing.T) {
	h := newHost(t, newEnv(t))
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var tail storeTail
		_, err := h.readTranscript(path, &tail, func(ptyapi.TranscriptEntry) error { return nil })
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("reading a FIFO succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("readTranscript blocked on a FIFO for 10 s")
	}
}
