package ptyclient_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/ptyclient"
	"aicli.dev/aicli/guest/server"
)

// streamPTY is a seam fake: only Subscribe is implemented, returning fixed
// bytes followed by end.
type streamPTY struct {
	ptyapi.PTY
	end error
}

type endReader struct {
	r   io.Reader
	end error
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, e.end
	}
	return n, err
}

func (s streamPTY) Subscribe(context.Context) (io.ReadCloser, error) {
	return io.NopCloser(&endReader{r: strings.NewReader("some output"), end: s.end}), nil
}

func TestStreamEndIsReportedAcrossTheWire(t *testing.T) {
	for _, c := range []struct {
		name string
		end  error
		want error
	}{
		{"clean end", io.EOF, nil},
		{"cut off", ptyapi.ErrSlowSubscriber, ptyapi.ErrSlowSubscriber},
		{"other failure", errors.New("boom"), ptyapi.ErrInternal},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(server.Handler(streamPTY{end: c.end}))
			defer srv.Close()
			rc, err := ptyclient.New(srv.Client(), srv.URL).Subscribe(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if string(b) != "some output" {
				t.Fatalf("got %q", b)
			}
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("stream ended with %v, want %v", err, c.want)
			}
		})
	}
}

func TestFollowTranscriptUnsupportedByThePTY(t *testing.T) {
	srv := httptest.NewServer(server.Handler(streamPTY{end: io.EOF}))
	defer srv.Close()
	err := ptyclient.New(srv.Client(), srv.URL).FollowTranscript(context.Background(),
		func(ptyapi.TranscriptEntry) error { return nil })
	if !errors.Is(err, ptyapi.ErrUnsupported) {
		t.Fatalf("follow on a non-follower: %v", err)
	}
}
