package ptyclient_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/fake"
	"aicli.dev/aicli/guest/internal/testenv"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/ptyclient"
	"aicli.dev/aicli/guest/ptyhost"
	"aicli.dev/aicli/guest/server"
)

var (
	fakeBin  string
	testBase string
)

func TestMain(m *testing.M) {
	dir, bin, err := testenv.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testBase, fakeBin = dir, bin
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// remote starts a real guest PTY host behind the HTTP server on loopback and
// returns a client for it.
func remote(t *testing.T) (*ptyclient.Client, *httptest.Server) {
	t.Helper()
	d := testenv.NewDirs(t, testBase)
	reg, err := harness.NewRegistry(fake.New(fake.Options{Binary: fakeBin, ExtraArgs: []string{"--quota-max", "900"}}))
	if err != nil {
		t.Fatal(err)
	}
	h, err := ptyhost.New(ptyhost.Options{Registry: reg, Home: d.Home, WorkDir: d.Work,
		RunAs: &ptyhost.Credential{UID: testenv.UID, GID: testenv.UID}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.Handler(h))
	t.Cleanup(func() {
		_ = h.Close()
		srv.Close()
	})
	return ptyclient.New(srv.Client(), srv.URL), srv
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func screenHas(t *testing.T, c ptyapi.PTY, s string) func() bool {
	return func() bool {
		scr, err := c.RenderScreen(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(strings.Join(scr.Lines, "\n"), s)
	}
}

func statusIs(t *testing.T, c ptyapi.PTY, want ptyapi.ExecutionStatus) func() bool {
	return func() bool {
		st, err := c.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return st.Status == want
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRoundTripOverHTTP(t *testing.T) {
	c, _ := remote(t)
	ctx := context.Background()
	if err := c.SendMessage(ctx, "too early"); !errors.Is(err, ptyapi.ErrNotStarted) {
		t.Fatalf("send before start: %v", err)
	}
	if _, err := c.Start(ctx, ptyapi.StartRequest{Harness: "claude"}); !errors.Is(err, ptyapi.ErrUnknownHarness) {
		t.Fatalf("unknown harness: %v", err)
	}
	sid := "0b7c3a52-3f4e-4a8e-9d51-0c1e2f3a4b5c"
	resp, err := c.Start(ctx, ptyapi.StartRequest{Harness: "fake", SessionID: sid, Cols: 100, Rows: 30,
		Env: map[string]string{"AICLI_FAKE_DELAY": "50ms"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.SessionID != sid || resp.PID == 0 || resp.Resumed {
		t.Fatalf("start response %+v", resp)
	}
	if _, err := c.Start(ctx, ptyapi.StartRequest{Harness: "fake"}); !errors.Is(err, ptyapi.ErrAlreadyStarted) {
		t.Fatalf("second start: %v", err)
	}
	sctx, cancelStream := context.WithCancel(ctx)
	stream, err := c.Subscribe(sctx)
	if err != nil {
		t.Fatal(err)
	}
	var got syncBuf
	streamDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(&got, stream)
		streamDone <- err
	}()
	eventually(t, "idle", statusIs(t, c, ptyapi.StatusIdle))

	if err := c.SendMessage(ctx, "over the wire"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "reply on the remote screen", screenHas(t, c, "fake[turn 1]: over the wire"))
	eventually(t, "reply in the remote byte stream", func() bool {
		return strings.Contains(got.String(), "fake[turn 1]: over the wire")
	})
	eventually(t, "idle after the turn", statusIs(t, c, ptyapi.StatusIdle))

	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Harness != "fake" || st.SessionID != sid || !st.Alive || st.Since.IsZero() {
		t.Fatalf("status %+v", st)
	}
	q, err := c.Quota(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Metrics) != 1 || q.Metrics[0].Max != 900 {
		t.Fatalf("quota %+v", q)
	}

	if err := c.Resize(ctx, 90, 20); err != nil {
		t.Fatal(err)
	}
	eventually(t, "resized screen", screenHas(t, c, "cols=90 rows=20"))
	if err := c.Resize(ctx, -1, 20); !errors.Is(err, ptyapi.ErrInvalidArgument) {
		t.Fatalf("bad resize: %v", err)
	}

	// Typing and keys: answer a permission prompt by hand.
	if err := c.SendMessage(ctx, "!ask remote"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "waiting", statusIs(t, c, ptyapi.StatusWaitingForInput))
	if err := c.SendString(ctx, "n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "denied", screenHas(t, c, "permission: denied"))
	if err := c.SendKeys(ctx, ptyapi.KeyEnter, "Nope"); !errors.Is(err, ptyapi.ErrInvalidArgument) {
		t.Fatalf("bad key: %v", err)
	}
	if err := c.SendString(ctx, "typed"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "typed text at the prompt", screenHas(t, c, "> typed"))
	if err := c.SendKeys(ctx, ptyapi.KeyBackspace, ptyapi.KeyBackspace, ptyapi.KeyEnter); err != nil {
		t.Fatal(err)
	}
	eventually(t, "keys delivered", screenHas(t, c, "fake[turn 3]: typ"))

	big := strings.Repeat("m", ptyapi.MaxMessageBytes+1)
	if err := c.SendMessage(ctx, big); !errors.Is(err, ptyapi.ErrMessageTooLarge) {
		t.Fatalf("oversize: %v", err)
	}

	cancelStream()
	select {
	case <-streamDone:
	case <-time.After(5 * time.Second):
		t.Fatal("stream did not end after its context was cancelled")
	}

	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	st, err = c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Alive || st.Status != ptyapi.StatusExited || st.ExitCode == nil {
		t.Fatalf("after stop %+v", st)
	}
	if err := c.SendMessage(ctx, "gone"); !errors.Is(err, ptyapi.ErrExited) {
		t.Fatalf("send after stop: %v", err)
	}
}

func TestServerRejectsOversizeAndMalformedBodies(t *testing.T) {
	c, srv := remote(t)
	ctx := context.Background()
	if _, err := c.Start(ctx, ptyapi.StartRequest{Harness: "fake"}); err != nil {
		t.Fatal(err)
	}
	post := func(path, body string) (int, error) {
		resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, server.ErrorFromBody(resp.StatusCode, b)
	}
	big := `{"text":"` + strings.Repeat("q", ptyapi.MaxMessageBytes+1) + `"}`
	code, err := post(server.PathSendMessage, big)
	if code != http.StatusRequestEntityTooLarge || !errors.Is(err, ptyapi.ErrMessageTooLarge) {
		t.Fatalf("oversize over the wire: %d %v", code, err)
	}
	code, err = post(server.PathSendMessage, `{"text":"x","extra":1}`)
	if code != http.StatusBadRequest || !errors.Is(err, ptyapi.ErrInvalidArgument) {
		t.Fatalf("unknown field: %d %v", code, err)
	}
	code, err = post(server.PathResize, `{"cols":`)
	if code != http.StatusBadRequest || !errors.Is(err, ptyapi.ErrInvalidArgument) {
		t.Fatalf("truncated body: %d %v", code, err)
	}
	resp, err := srv.Client().Get(srv.URL + server.PathStart)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET start: %d", resp.StatusCode)
	}
}

func TestCrashSurfacesAsExitedRemotely(t *testing.T) {
	c, _ := remote(t)
	ctx := context.Background()
	if _, err := c.Start(ctx, ptyapi.StartRequest{Harness: "fake"}); err != nil {
		t.Fatal(err)
	}
	stream, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, stream)
		done <- err
	}()
	eventually(t, "idle", statusIs(t, c, ptyapi.StatusIdle))
	if err := c.SendMessage(ctx, "!crash"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "exited", statusIs(t, c, ptyapi.StatusExited))
	st, _ := c.Status(ctx)
	if st.ExitCode == nil || *st.ExitCode != 3 {
		t.Fatalf("exit %+v", st)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stream ended with %v, want clean EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("remote stream did not end when the CLI exited")
	}
}

func TestFollowTranscriptOverHTTP(t *testing.T) {
	c, _ := remote(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	early, cancelEarly := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelEarly()
	if err := c.FollowTranscript(early, func(ptyapi.TranscriptEntry) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("follow before start should wait for the CLI: %v", err)
	}
	if _, err := c.Start(ctx, ptyapi.StartRequest{Harness: "fake"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "idle", statusIs(t, c, ptyapi.StatusIdle))
	entries := make(chan ptyapi.TranscriptEntry, 10)
	done := make(chan error, 1)
	go func() {
		done <- c.FollowTranscript(ctx, func(e ptyapi.TranscriptEntry) error {
			entries <- e
			return nil
		})
	}()
	if err := c.SendMessage(ctx, "transcribe me"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []ptyapi.TranscriptEntry{
		{Role: ptyapi.RoleUser, Text: "transcribe me"},
		{Role: ptyapi.RoleAssistant, Text: "fake[turn 1]: transcribe me"},
	} {
		select {
		case e := <-entries:
			if e.Role != want.Role || e.Text != want.Text || e.ID == "" {
				t.Fatalf("entry %+v, want %+v", e, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s entry over the wire", want.Role)
		}
	}
	errStop := errors.New("stop here")
	if err := c.FollowTranscript(ctx, func(ptyapi.TranscriptEntry) error { return errStop }); !errors.Is(err, errStop) {
		t.Fatalf("callback error: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("follow ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end with its context")
	}
}
