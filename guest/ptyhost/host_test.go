package ptyhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/fake"
	"aicli.dev/aicli/guest/harness/fake/cli"
	"aicli.dev/aicli/guest/harness/fake/sessionstore"
	"aicli.dev/aicli/guest/ptyapi"
)

func TestSendMessageReplyOnScreenAndStream(t *testing.T) {
	e := newEnv(t)
	h := newHost(t, e)
	if st := status(t, h); st.Status != ptyapi.StatusStarting || st.Alive {
		t.Fatalf("before start: %+v", st)
	}
	resp := start(t, h, ptyapi.StartRequest{Env: map[string]string{"AICLI_FAKE_DELAY": "400ms"}})
	if resp.PID <= 0 || resp.SessionID == "" {
		t.Fatalf("start response %+v", resp)
	}
	stream, err := h.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := collect(stream)
	waitStatus(t, h, ptyapi.StatusIdle)

	if err := h.SendMessage(context.Background(), "hello world"); err != nil {
		t.Fatal(err)
	}
	sawBusy := false
	eventually(t, 10*time.Second, "reply on screen", func() bool {
		if status(t, h).Status == ptyapi.StatusBusy {
			sawBusy = true
		}
		return strings.Contains(screenText(t, h), "fake[turn 1]: hello world")
	})
	if !sawBusy {
		t.Error("status never showed BUSY during a 400ms turn")
	}
	waitStatus(t, h, ptyapi.StatusIdle)
	eventually(t, 5*time.Second, "reply in byte stream", func() bool {
		return strings.Contains(c.String(), "fake[turn 1]: hello world")
	})
	st := status(t, h)
	if st.Harness != "fake" || st.SessionID != resp.SessionID || st.PendingMessages != 0 || !st.Alive {
		t.Fatalf("status %+v", st)
	}
	_ = stream.Close()
	<-c.done
}

func TestAskIsWaitingUntilAnswered(t *testing.T) {
	h := newHost(t, newEnv(t))
	start(t, h, ptyapi.StartRequest{})
	waitStatus(t, h, ptyapi.StatusIdle)
	if err := h.SendMessage(context.Background(), "may I? !ask"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, h, ptyapi.StatusWaitingForInput)
	// It stays WAITING (never IDLE) while nobody answers.
	for i := 0; i < 30; i++ {
		if s := status(t, h).Status; s != ptyapi.StatusWaitingForInput {
			t.Fatalf("status %s while the permission prompt is up", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := h.SendString(context.Background(), "y"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, "permission: granted")
	waitScreen(t, h, "fake[turn 1]: may I? !ask")
	waitStatus(t, h, ptyapi.StatusIdle)
}

func TestQueuedMessagesAreWholeAndHeldUntilIdle(t *testing.T) {
	e := newEnv(t)
	h := newHost(t, e)
	sid := newSessionID()
	start(t, h, ptyapi.StartRequest{SessionID: sid, Env: map[string]string{"AICLI_FAKE_DELAY": "0s"}})
	waitStatus(t, h, ptyapi.StatusIdle)
	ctx := context.Background()
	if err := h.SendMessage(ctx, "first !slow"); err != nil {
		t.Fatal(err)
	}
	// BUSY from the acceptance on; wait until the slow turn runs.
	eventually(t, 10*time.Second, "the slow turn delivered", func() bool {
		st := status(t, h)
		return st.Status == ptyapi.StatusBusy && st.PendingMessages == 0
	})

	const senders = 10
	texts := make([]string, senders)
	var wg sync.WaitGroup
	for i := range senders {
		// Distinct, long, multi-line texts: any interleaving or split shows.
		texts[i] = fmt.Sprintf("message %d begins\n%s\nmessage %d ends", i,
			strings.Repeat(string(rune('a'+i)), 3000+i), i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.SendMessage(ctx, texts[i]); err != nil {
				t.Errorf("sender %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	// Everything is queued in the guest while the slow turn is busy.
	if st := status(t, h); st.Status != ptyapi.StatusBusy || st.PendingMessages != senders {
		t.Fatalf("during the slow turn: status %s, pending %d (want BUSY, %d)", st.Status, st.PendingMessages, senders)
	}
	path := sessionstore.Path(e.home, sid)
	var recs []sessionstore.Record
	eventually(t, 30*time.Second, "all turns in the session store", func() bool {
		r, err := sessionstore.ReadFile(path)
		if err != nil {
			return false
		}
		recs = r
		return len(r) == 2*(senders+1)
	})
	var users []string
	for i, r := range recs {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if r.Type != want {
			t.Fatalf("record %d is %s, want %s (a message arrived while busy)", i, r.Type, want)
		}
		if r.Type == "user" {
			users = append(users, r.Text())
		}
	}
	if users[0] != "first !slow" {
		t.Fatalf("first delivered %q", users[0])
	}
	seen := map[string]bool{}
	for _, u := range users[1:] {
		seen[u] = true
	}
	for i, txt := range texts {
		if !seen[txt] {
			t.Errorf("message %d not delivered whole", i)
		}
	}
	if st := status(t, h); st.PendingMessages != 0 {
		t.Fatalf("pending %d after all turns", st.PendingMessages)
	}
}

func TestResizeReachesTheCLI(t *testing.T) {
	h := newHost(t, newEnv(t))
	start(t, h, ptyapi.StartRequest{Cols: 90, Rows: 25})
	waitScreen(t, h, "cols=90 rows=25")
	if err := h.Resize(context.Background(), 100, 30); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, "cols=100 rows=30")
	s, _ := h.RenderScreen(context.Background())
	if s.Cols != 100 || s.Rows != 30 || len(s.Lines) != 30 {
		t.Fatalf("screen %dx%d with %d lines", s.Cols, s.Rows, len(s.Lines))
	}
	if err := h.Resize(context.Background(), 0, 10); !errors.Is(err, ptyapi.ErrInvalidArgument) {
		t.Fatalf("resize 0x10: %v", err)
	}
}

func TestTerminalQueriesAreAnswered(t *testing.T) {
	h := newHost(t, newEnv(t), withFakeArgs("--probe-terminal"))
	start(t, h, ptyapi.StartRequest{})
	waitScreen(t, h, "cursor position report: row=5 col=10")
	waitScreen(t, h, "device attributes: ?62;1;6;22c")
}

func TestAltScreenIsRendered(t *testing.T) {
	h := newHost(t, newEnv(t), withFakeArgs("--alt-screen"))
	start(t, h, ptyapi.StartRequest{})
	waitStatus(t, h, ptyapi.StatusIdle)
	if err := h.SendMessage(context.Background(), "on the alt screen"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, "fake[turn 1]: on the alt screen")
}

func TestResumeContinuesTurnNumbering(t *testing.T) {
	e := newEnv(t)
	sid := newSessionID()
	h := newHost(t, e)
	start(t, h, ptyapi.StartRequest{SessionID: sid})
	waitStatus(t, h, ptyapi.StatusIdle)
	for _, m := range []string{"one", "two"} {
		if err := h.SendMessage(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	waitScreen(t, h, "fake[turn 2]: two")
	if err := h.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	h2 := newHost(t, e)
	resp := start(t, h2, ptyapi.StartRequest{ResumeSession: sid})
	if !resp.Resumed || resp.SessionID != sid {
		t.Fatalf("resume response %+v", resp)
	}
	waitScreen(t, h2, "resumed session "+sid+" at turn 2")
	waitStatus(t, h2, ptyapi.StatusIdle)
	if err := h2.SendMessage(context.Background(), "three"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h2, "fake[turn 3]: three")
}

func TestCrashReportsExitCode(t *testing.T) {
	h := newHost(t, newEnv(t))
	start(t, h, ptyapi.StartRequest{})
	stream, err := h.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := collect(stream)
	waitStatus(t, h, ptyapi.StatusIdle)
	if err := h.SendMessage(context.Background(), "!crash now"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, h, ptyapi.StatusExited)
	st := status(t, h)
	if st.Alive || st.ExitCode == nil || *st.ExitCode != 3 {
		t.Fatalf("after crash: %+v", st)
	}
	if err := h.SendMessage(context.Background(), "anyone?"); !errors.Is(err, ptyapi.ErrExited) {
		t.Fatalf("send after exit: %v", err)
	}
	if err := h.SendString(context.Background(), "x"); !errors.Is(err, ptyapi.ErrExited) {
		t.Fatalf("send string after exit: %v", err)
	}
	select {
	case <-c.done:
		if !errors.Is(c.err, io.EOF) {
			t.Fatalf("stream ended with %v", c.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("byte stream did not end after the CLI exited")
	}
	if _, err := h.Start(context.Background(), ptyapi.StartRequest{Harness: "fake"}); !errors.Is(err, ptyapi.ErrAlreadyStarted) {
		t.Fatalf("second start: %v", err)
	}
}

func TestStopKillsTheWholeProcessGroup(t *testing.T) {
	h := newHost(t, newEnv(t))
	start(t, h, ptyapi.StartRequest{})
	waitStatus(t, h, ptyapi.StatusIdle)
	if err := h.SendMessage(context.Background(), "!spawn a helper"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, "fake[turn 1]: !spawn a helper")
	s := screenText(t, h)
	i := strings.Index(s, "spawned pid ")
	if i < 0 {
		t.Fatalf("no spawned pid on screen:\n%s", s)
	}
	gpid, err := strconv.Atoi(strings.Fields(s[i+len("spawned pid "):])[0])
	if err != nil {
		t.Fatal(err)
	}
	if !processAlive(gpid) {
		t.Fatalf("grandchild %d not running before Stop", gpid)
	}
	if err := h.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := status(t, h)
	if st.Status != ptyapi.StatusExited || st.Alive {
		t.Fatalf("after stop: %+v", st)
	}
	eventually(t, 10*time.Second, "grandchild gone", func() bool { return !processAlive(gpid) })
}

// processAlive is true when pid exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	j := strings.LastIndexByte(s, ')')
	return j < 0 || len(s) < j+3 || s[j+2] != 'Z'
}

func TestMessageLimitsAndStateErrors(t *testing.T) {
	h := newHost(t, newEnv(t))
	ctx := context.Background()
	if err := h.SendMessage(ctx, "early"); !errors.Is(err, ptyapi.ErrNotStarted) {
		t.Fatalf("before start: %v", err)
	}
	if _, err := h.RenderScreen(ctx); !errors.Is(err, ptyapi.ErrNotStarted) {
		t.Fatalf("render before start: %v", err)
	}
	if _, err := h.Start(ctx, ptyapi.StartRequest{Harness: "nope"}); !errors.Is(err, ptyapi.ErrUnknownHarness) {
		t.Fatalf("unknown harness: %v", err)
	}
	start(t, h, ptyapi.StartRequest{})
	big := strings.Repeat("x", ptyapi.MaxMessageBytes+1)
	err := h.SendMessage(ctx, big)
	if !errors.Is(err, ptyapi.ErrMessageTooLarge) {
		t.Fatalf("oversize message: %v", err)
	}
	if st := status(t, h); st.PendingMessages != 0 {
		t.Fatalf("oversize message was queued: %+v", st)
	}
	if err := h.SendKeys(ctx, "Hyper-Q"); !errors.Is(err, ptyapi.ErrInvalidArgument) {
		t.Fatalf("unknown key: %v", err)
	}
	if err := h.SendMessage(ctx, strings.Repeat("y", ptyapi.MaxMessageBytes)); err != nil {
		t.Fatalf("message at the limit: %v", err)
	}
}

func TestCLIRunsUnprivilegedAndCannotReadTheGuest(t *testing.T) {
	// The test process plays the guest: non-dumpable, like aicli-guest.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0) })
	e := newEnv(t)
	h := newHost(t, e)
	resp := start(t, h, ptyapi.StartRequest{})
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", resp.PID))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Uid:") || strings.HasPrefix(l, "Gid:") {
			f := strings.Fields(l)
			for _, id := range f[1:] {
				if id != strconv.Itoa(testUID) {
					t.Fatalf("CLI %s", l)
				}
			}
		}
	}
	waitStatus(t, h, ptyapi.StatusIdle)
	guest := os.Getpid()
	msg := fmt.Sprintf("!id !read /proc/%d/environ", guest)
	if err := h.SendMessage(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, fmt.Sprintf("id: uid=%d gid=%d", testUID, testUID))
	waitScreen(t, h, fmt.Sprintf("read /proc/%d/environ: error:", guest))
	waitScreen(t, h, "permission denied")
	// The home it was given belongs to it, seed files included.
	for _, p := range []string{e.home, filepath.Join(e.home, ".fake", "config.json")} {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != testUID {
			t.Fatalf("%s owned by %d", p, st.Uid)
		}
	}
}

func TestSlowSubscriberIsCutOffWithoutStallingTheCLI(t *testing.T) {
	h := newHost(t, newEnv(t), func(o *Options, _ *fakeOptions) { o.SubscriberBuffer = 2048 })
	start(t, h, ptyapi.StartRequest{Env: map[string]string{"AICLI_FAKE_DELAY": "0s"}})
	slow, err := h.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, h, ptyapi.StatusIdle)
	for i := range 5 {
		if err := h.SendMessage(context.Background(), fmt.Sprintf("flood %d %s", i, strings.Repeat("z", 500))); err != nil {
			t.Fatal(err)
		}
	}
	waitScreen(t, h, "fake[turn 5]: flood 4")
	var rerr error
	for rerr == nil {
		_, rerr = slow.Read(make([]byte, 512))
	}
	if !errors.Is(rerr, ptyapi.ErrSlowSubscriber) {
		t.Fatalf("slow subscriber ended with %v", rerr)
	}
}

// lockedBuffer is a goroutine-safe bytes sink for the mirror.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestMirrorGetsVerbatimOutput(t *testing.T) {
	var mirror lockedBuffer
	h := newHost(t, newEnv(t), func(o *Options, _ *fakeOptions) { o.Mirror = &mirror })
	start(t, h, ptyapi.StartRequest{})
	waitStatus(t, h, ptyapi.StatusIdle)
	if err := h.SendMessage(context.Background(), "mirrored"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "reply in the mirror", func() bool {
		return strings.Contains(mirror.String(), "fake[turn 1]: mirrored")
	})
	if !strings.Contains(mirror.String(), "\x1b[") {
		t.Fatal("mirror output is not verbatim (no escape sequences)")
	}
}

func TestQuotaFromTheScreen(t *testing.T) {
	h := newHost(t, newEnv(t), withFakeArgs("--quota-max", "5000"))
	start(t, h, ptyapi.StartRequest{})
	waitStatus(t, h, ptyapi.StatusIdle)
	q, err := h.Quota(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Metrics) != 1 || q.Metrics[0].Max != 5000 || q.Metrics[0].Current != 0 || q.Metrics[0].Window != "5h" {
		t.Fatalf("quota %+v", q)
	}
	if err := h.SendMessage(context.Background(), "spend some tokens"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, "fake[turn 1]: spend some tokens")
	eventually(t, 5*time.Second, "quota to grow", func() bool {
		q, _ := h.Quota(context.Background())
		return len(q.Metrics) == 1 && q.Metrics[0].Current > 0
	})
}

func TestStopBeforeStartAndTwice(t *testing.T) {
	h := newHost(t, newEnv(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	start(t, h, ptyapi.StartRequest{})
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if code, ok := h.ExitCode(); !ok || code != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit code %d %v", code, ok)
	}
}

// queuingFake is the fake harness declared as accepting input while busy.
type queuingFake struct{ *fake.Adapter }

func (queuingFake) Delivery() harness.DeliveryPolicy {
	return harness.DeliveryPolicy{AcceptsQueuedInput: true, SettleAfterSubmit: 50 * time.Millisecond}
}

func TestAcceptsQueuedInputDeliversWhileBusy(t *testing.T) {
	e := newEnv(t)
	h := newHostWith(t, e, func(a *fake.Adapter) harness.Adapter { return queuingFake{a} })
	start(t, h, ptyapi.StartRequest{})
	waitStatus(t, h, ptyapi.StatusIdle)
	ctx := context.Background()
	if err := h.SendMessage(ctx, "first !slow"); err != nil {
		t.Fatal(err)
	}
	// BUSY from the acceptance on; wait until the slow turn runs.
	eventually(t, 10*time.Second, "the slow turn delivered", func() bool {
		st := status(t, h)
		return st.Status == ptyapi.StatusBusy && st.PendingMessages == 0
	})
	if err := h.SendMessage(ctx, "second"); err != nil {
		t.Fatal(err)
	}
	// Delivered during the slow turn: nothing pending while still BUSY.
	eventually(t, 2*time.Second, "delivery while busy", func() bool {
		st := status(t, h)
		if st.Status != ptyapi.StatusBusy {
			t.Fatalf("status %s before the slow turn ended", st.Status)
		}
		return st.PendingMessages == 0
	})
	waitScreen(t, h, "fake[turn 2]: second")
}

func TestPasteCannotBeEscapedByTheMessage(t *testing.T) {
	e := newEnv(t)
	h := newHost(t, e)
	sid := newSessionID()
	start(t, h, ptyapi.StartRequest{SessionID: sid})
	waitStatus(t, h, ptyapi.StatusIdle)
	// Unsanitised, the end marker and CR would submit "one" and type "two" as a second turn.
	if err := h.SendMessage(context.Background(), "one\x1b[201~\rtwo"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, "fake[turn 1]: one")
	waitStatus(t, h, ptyapi.StatusIdle)
	recs, err := sessionstore.ReadFile(sessionstore.Path(e.home, sid))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Text() != "one\ntwo" {
		t.Fatalf("store after one message: %d records, first %q", len(recs), recs[0].Text())
	}
}

// seedingFake adds a merged seed file to the fake harness.
type seedingFake struct{ *fake.Adapter }

func (seedingFake) SeedFiles(harness.LaunchRequest) ([]harness.SeedFile, error) {
	return []harness.SeedFile{
		{Path: "cfg/settings.txt", Data: []byte("fresh"), Merge: func(old []byte) ([]byte, error) {
			return append(old, []byte("+merged")...), nil
		}},
		{Path: "../escape.txt", Data: []byte("stays inside the home")},
	}, nil
}

func TestSeedFilesMergeAndStayInsideHome(t *testing.T) {
	e := newEnv(t)
	if err := os.MkdirAll(filepath.Join(e.home, "cfg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "cfg", "settings.txt"), []byte("user"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHostWith(t, e, func(a *fake.Adapter) harness.Adapter { return seedingFake{a} })
	start(t, h, ptyapi.StartRequest{})
	b, err := os.ReadFile(filepath.Join(e.home, "cfg", "settings.txt"))
	if err != nil || string(b) != "user+merged" {
		t.Fatalf("merged seed: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(e.home), "escape.txt")); err == nil {
		t.Fatal("a seed path escaped the home")
	}
	if b, err := os.ReadFile(filepath.Join(e.home, "escape.txt")); err != nil || string(b) != "stays inside the home" {
		t.Fatalf("clamped seed: %q %v", b, err)
	}
}

func TestStartFailsCleanlyWithoutTheBinary(t *testing.T) {
	e := newEnv(t)
	reg, err := harness.NewRegistry(fake.New(fake.Options{Binary: "/nonexistent/aicli-fake-cli"}))
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Registry: reg, Home: e.home, WorkDir: e.work})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	if _, err := h.Start(context.Background(), ptyapi.StartRequest{Harness: "fake"}); !errors.Is(err, ptyapi.ErrInvalidArgument) {
		t.Fatalf("start without binary: %v", err)
	}
	if _, err := h.Start(context.Background(), ptyapi.StartRequest{Harness: "fake", WorkDir: "/nonexistent"}); !errors.Is(err, ptyapi.ErrInvalidArgument) {
		t.Fatalf("start with a missing workdir: %v", err)
	}
	if st := status(t, h); st.Alive || st.Status != ptyapi.StatusStarting {
		t.Fatalf("status after failed start %+v", st)
	}
}

// unassignedFake launches the fake without a session id, like a CLI that
// cannot pre-assign one: the host must discover it from the store.
type unassignedFake struct{ *fake.Adapter }

func (a unassignedFake) Launch(req harness.LaunchRequest) (harness.Launch, error) {
	l, err := a.Adapter.Launch(req)
	if err != nil {
		return l, err
	}
	for i, arg := range l.Args {
		if arg == "--session-id" {
			l.Args = append(l.Args[:i:i], l.Args[i+2:]...)
			break
		}
	}
	l.SessionID = ""
	return l, nil
}

func TestSessionIDIsDiscoveredWhenNotPreassigned(t *testing.T) {
	e := newEnv(t)
	h := newHostWith(t, e, func(a *fake.Adapter) harness.Adapter { return unassignedFake{a} },
		func(o *Options, _ *fakeOptions) { o.DefaultHarness = "fake" })
	resp, err := h.Start(context.Background(), ptyapi.StartRequest{}) // harness from DefaultHarness
	if err != nil {
		t.Fatal(err)
	}
	if resp.SessionID != "" {
		t.Fatalf("session id %q known at launch", resp.SessionID)
	}
	waitStatus(t, h, ptyapi.StatusIdle)
	if err := h.SendMessage(context.Background(), "make a session file"); err != nil {
		t.Fatal(err)
	}
	var id string
	eventually(t, 10*time.Second, "session id discovered", func() bool {
		id = status(t, h).SessionID
		return id != ""
	})
	if _, err := os.Stat(sessionstore.Path(e.home, id)); err != nil {
		t.Fatalf("discovered id %q has no store file: %v", id, err)
	}
}

// settlingFake is the fake harness declared as drawing a ready-looking
// screen before it is ready.
type settlingFake struct{ *fake.Adapter }

const testStartupSettle = 700 * time.Millisecond

func (settlingFake) Delivery() harness.DeliveryPolicy {
	return harness.DeliveryPolicy{SettleAfterSubmit: 50 * time.Millisecond, StartupSettle: testStartupSettle}
}

// TestStartupSettleHoldsTheFirstIdle: with a StartupSettle, the CLI's first
// idle screen reads STARTING until it has held that long, then IDLE without
// any further output; a message sent meanwhile waits and is then delivered.
func TestStartupSettleHoldsTheFirstIdle(t *testing.T) {
	e := newEnv(t)
	h := newHostWith(t, e, func(a *fake.Adapter) harness.Adapter { return settlingFake{a} })
	start(t, h, ptyapi.StartRequest{Env: map[string]string{"AICLI_FAKE_DELAY": "0s"}})
	waitScreen(t, h, cli.FooterHint)
	shown := time.Now()
	if st := status(t, h).Status; st != ptyapi.StatusStarting {
		t.Fatalf("status %s right after the idle screen appeared, want %s", st, ptyapi.StatusStarting)
	}
	if err := h.SendMessage(context.Background(), "early"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the first IDLE or the reply", func() bool {
		return status(t, h).Status == ptyapi.StatusIdle || strings.Contains(screenText(t, h), "fake[turn 1]")
	})
	if d := time.Since(shown); d < testStartupSettle-100*time.Millisecond {
		t.Fatalf("IDLE or delivery %v after the idle screen appeared, want ≥ %v", d, testStartupSettle)
	}
	waitScreen(t, h, "fake[turn 1]: early")
	waitStatus(t, h, ptyapi.StatusIdle)
}
