package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"aicli.dev/aicli/guest/daemon"
	"aicli.dev/aicli/guest/internal/testenv"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/ptyclient"
	scwire "aicli.dev/aicli/guest/sidechannel/wire"
	"aicli.dev/aicli/internal/gateway"
	"aicli.dev/aicli/internal/gateway/gatewaytest"
)

var (
	testBase string
	fakeBin  string
	guestBin string
)

func TestMain(m *testing.M) {
	dir, bin, err := testenv.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testBase, fakeBin = dir, bin
	guestBin = filepath.Join(dir, "aicli-guest")
	build := exec.Command("go", "build", "-o", guestBin, "aicli.dev/aicli/cmd/aicli-guest")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build guest: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuf collects output from a goroutine.
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

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func guestEnv(d testenv.Dirs, extra ...string) []string {
	return append([]string{
		"PATH=/usr/bin:/bin",
		daemon.EnvFakeCLI + "=" + fakeBin,
		daemon.EnvHome + "=" + d.Home,
		daemon.EnvWorkDir + "=" + d.Work,
		daemon.EnvUID + "=" + strconv.Itoa(testenv.UID),
	}, extra...)
}

// startTransparent runs the guest binary on a terminal, like docker run -it.
func startTransparent(t *testing.T, cols, rows uint16) (*exec.Cmd, *os.File, *syncBuf) {
	t.Helper()
	d := testenv.NewDirs(t, testBase)
	cmd := exec.Command(guestBin)
	cmd.Env = guestEnv(d)
	var logs syncBuf
	cmd.Stderr = &logs
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: cols, Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = ptmx.Close()
		if t.Failed() {
			t.Logf("guest logs:\n%s", logs.String())
		}
	})
	var out syncBuf
	go func() { _, _ = io.Copy(&out, ptmx) }()
	return cmd, ptmx, &out
}

func TestTransparentModeBehavesLikeTheCLI(t *testing.T) {
	cmd, term, out := startTransparent(t, 100, 30)
	waitFor(t, "the CLI's prompt and its terminal size", func() bool {
		return strings.Contains(out.String(), "cols=100 rows=30")
	})
	if _, err := term.Write([]byte("hello there\r")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reply", func() bool { return strings.Contains(out.String(), "fake[turn 1]: hello there") })

	if err := pty.Setsize(term, &pty.Winsize{Cols: 90, Rows: 20}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the resize to reach the CLI", func() bool { return strings.Contains(out.String(), "cols=90 rows=20") })

	if _, err := term.Write([]byte("!crash\r")); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("guest exit: %v, want the CLI's exit code 3", err)
	}
}

var pidRE = regexp.MustCompile(`id: uid=(\d+) gid=\d+ pid=(\d+)`)

func TestSIGTERMStopsTheCLIAndExitsZero(t *testing.T) {
	cmd, term, out := startTransparent(t, 120, 40)
	waitFor(t, "prompt", func() bool { return strings.Contains(out.String(), "? for shortcuts") })
	if _, err := term.Write([]byte("!id\r")); err != nil {
		t.Fatal(err)
	}
	var m []string
	waitFor(t, "the CLI's id line", func() bool {
		m = pidRE.FindStringSubmatch(out.String())
		return m != nil
	})
	if m[1] != strconv.Itoa(testenv.UID) {
		t.Fatalf("CLI runs as uid %s", m[1])
	}
	cliPID, _ := strconv.Atoi(m[2])
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("guest after SIGTERM: %v, want exit 0", err)
	}
	if err := syscall.Kill(cliPID, 0); !errors.Is(err, syscall.ESRCH) {
		// It may linger as a zombie of nobody only if reparented; it must not run.
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cliPID))
		if !strings.Contains(string(b), ") Z ") {
			t.Fatalf("CLI pid %d still running after the guest stopped", cliPID)
		}
	}
}

// supervised is one guest process dialled in to an in-process gateway.
type supervised struct {
	client       *ptyclient.Client
	launch       *gateway.Launch
	cmd          *exec.Cmd
	stdout, logs *syncBuf
	exited       chan error
}

// startSupervised prepares a conversation on a real gateway, runs the guest
// binary with the bootstrap environment and waits for its handshake.
// startSupervised runs the guest binary in supervised mode against a real
// gateway; env adds to the guest's environment.
func startSupervised(ctx context.Context, t *testing.T, conv string, env ...string) *supervised {
	t.Helper()
	dataDir, err := os.MkdirTemp("", "gw-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dataDir) })
	gw, err := gateway.New(gateway.Options{DataDir: dataDir, Tokens: gatewaytest.NewTokens()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	launch, err := gw.Prepare(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	d := testenv.NewDirs(t, testBase)
	var extra []string
	for k, v := range launch.Env {
		if k == scwire.EnvSocket {
			v = launch.HostSocket // no container here: dial the host path
		}
		extra = append(extra, k+"="+v)
	}
	s := &supervised{launch: launch, stdout: &syncBuf{}, logs: &syncBuf{}, exited: make(chan error, 1)}
	s.cmd = exec.Command(guestBin)
	s.cmd.Env = guestEnv(d, append(append(extra, daemon.EnvLinger+"=500ms"), env...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("guest logs:\n%s", s.logs.String())
		}
	})
	gc, err := gw.WaitGuest(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	s.client = ptyclient.New(gc.HTTPClient(), "http://guest")
	return s
}

// waitExit returns the guest's exit code.
func (s *supervised) waitExit(t *testing.T) int {
	t.Helper()
	select {
	case err := <-s.exited:
		var ee *exec.ExitError
		if err == nil {
			return 0
		}
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		t.Fatal(err)
	case <-time.After(20 * time.Second):
		t.Fatal("guest did not exit")
	}
	return -1
}

func TestSupervisedModeOverTheSideChannel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sv := startSupervised(ctx, t, "conv-guest-test", daemon.EnvMirrorOutput+"=1")
	c, launch, cmd, stdout, logs := sv.client, sv.launch, sv.cmd, sv.stdout, sv.logs
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Alive {
		t.Fatalf("CLI running before Start: %+v", st)
	}
	resp, err := c.Start(ctx, ptyapi.StartRequest{Harness: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var streamed syncBuf
	go func() { _, _ = io.Copy(&streamed, stream) }()
	waitFor(t, "idle", func() bool {
		st, err := c.Status(ctx)
		return err == nil && st.Status == ptyapi.StatusIdle
	})
	if err := c.SendMessage(ctx, "through the side channel"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "reply on the remote screen", func() bool {
		s, err := c.RenderScreen(ctx)
		return err == nil && strings.Contains(strings.Join(s.Lines, "\n"), "fake[turn 1]: through the side channel")
	})
	waitFor(t, "reply in the byte stream over the side channel", func() bool {
		return strings.Contains(streamed.String(), "fake[turn 1]: through the side channel")
	})
	// The native transcript follows over the side channel too.
	errSeen := errors.New("seen")
	var got []ptyapi.TranscriptEntry
	ferr := c.FollowTranscript(ctx, func(e ptyapi.TranscriptEntry) error {
		got = append(got, e)
		if e.Role == ptyapi.RoleAssistant {
			return errSeen
		}
		return nil
	})
	if !errors.Is(ferr, errSeen) || len(got) != 2 || got[0].Text != "through the side channel" {
		t.Fatalf("transcript over the side channel: %v %+v", ferr, got)
	}
	// Asked to, the container log (stdout) carries the CLI's verbatim output.
	waitFor(t, "reply in the container log", func() bool {
		return strings.Contains(stdout.String(), "fake[turn 1]: through the side channel")
	})
	// Neither the CLI's environment nor the guest's logs hold the launch token.
	token := launch.Env[scwire.EnvLaunchToken]
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", resp.PID))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{token, scwire.EnvLaunchToken, scwire.EnvFingerprint, scwire.EnvSocket} {
		if bytes.Contains(env, []byte(k)) {
			t.Fatalf("CLI environment contains %q", k)
		}
	}
	if strings.Contains(logs.String(), token) {
		t.Fatal("guest logs contain the launch token")
	}
	rss := vmRSS(t, cmd.Process.Pid)
	t.Logf("guest RSS after one turn: %.1f MiB", float64(rss)/(1<<20))
	if rss > 30<<20 {
		t.Errorf("guest RSS %d MiB is far over the 15 MiB target", rss>>20)
	}

	// A crash ends the guest with the CLI's exit code after the linger.
	if err := c.SendMessage(ctx, "!crash"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "exited status", func() bool {
		st, err := c.Status(ctx)
		return err == nil && st.Status == ptyapi.StatusExited && st.ExitCode != nil && *st.ExitCode == 3
	})
	if code := sv.waitExit(t); code != 3 {
		t.Fatalf("guest exit %d, want the CLI's 3", code)
	}
}

func TestSupervisorStopEndsTheGuestWithZero(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sv := startSupervised(ctx, t, "conv-stop-test")
	if _, err := sv.client.Start(ctx, ptyapi.StartRequest{}); err != nil { // the image's default harness
		t.Fatal(err)
	}
	waitFor(t, "idle", func() bool {
		st, err := sv.client.Status(ctx)
		return err == nil && st.Status == ptyapi.StatusIdle
	})
	if err := sv.client.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := sv.client.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Alive || st.ExitCode == nil || *st.ExitCode != 128+int(syscall.SIGTERM) {
		t.Fatalf("after stop: %+v", st)
	}
	if code := sv.waitExit(t); code != 0 {
		t.Fatalf("guest exit %d after a requested stop, want 0", code)
	}
	// Unless asked to, a supervised guest keeps the CLI's output out of the
	// container log (the supervisor has the stream).
	if out := sv.stdout.String(); strings.Contains(out, "for shortcuts") {
		t.Fatalf("CLI output in the container log without %s=1: %q", daemon.EnvMirrorOutput, out)
	}
}

func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestNonDumpableGuestHidesItsEnvironmentFromASameUIDCLI runs the guest as an
// unprivileged user, so the CLI has the guest's own uid: only the guest's
// PR_SET_DUMPABLE=0 keeps /proc/<guest>/environ closed to the CLI.
func TestNonDumpableGuestHidesItsEnvironmentFromASameUIDCLI(t *testing.T) {
	d := testenv.NewDirs(t, testBase)
	if err := os.Mkdir(d.Home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d.Home, testenv.UID, testenv.UID); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(guestBin)
	cmd.Env = guestEnv(d, "GUEST_SECRET=hunter2")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: testenv.UID, Gid: testenv.UID}}
	var logs syncBuf
	cmd.Stderr = &logs
	term, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 120, Rows: 40})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = term.Close()
		if t.Failed() {
			t.Logf("guest logs:\n%s", logs.String())
		}
	})
	var out syncBuf
	go func() { _, _ = io.Copy(&out, term) }()
	waitFor(t, "prompt", func() bool { return strings.Contains(out.String(), "? for shortcuts") })
	if _, err := term.Write([]byte("!id !read /proc/self/environ\r")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the CLI reading its own environment", func() bool {
		return strings.Contains(out.String(), "read /proc/self/environ: ok")
	})
	if m := pidRE.FindStringSubmatch(out.String()); m == nil || m[1] != strconv.Itoa(testenv.UID) {
		t.Fatalf("CLI uid line %v, want uid %d (the guest's own)", m, testenv.UID)
	}
	guestEnvFile := fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid)
	if _, err := term.Write([]byte("!read " + guestEnvFile + "\r")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the CLI's attempt on the guest's environment", func() bool {
		return strings.Contains(out.String(), "read "+guestEnvFile+": ")
	})
	s := out.String()
	line := s[strings.Index(s, "read "+guestEnvFile+": "):]
	if !strings.Contains(line[:min(len(line), 200)], "permission denied") {
		t.Fatalf("same-uid CLI read the guest's environment: %q", line[:min(len(line), 200)])
	}
}
