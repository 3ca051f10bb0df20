package ptyhost

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/fake"
	"aicli.dev/aicli/guest/internal/testenv"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/vtscreen"
)

// testUID is the unprivileged user the CLI runs as in tests.
const testUID = testenv.UID

var (
	fakeBin  string // the fake CLI built for this test run
	testBase string // a world-traversable temp root for homes and workdirs
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

// env is one test's home and workdir, owned by the CLI user.
type env struct {
	home, work string
}

func newEnv(t testing.TB) env {
	t.Helper()
	d := testenv.NewDirs(t, testBase)
	return env{home: d.Home, work: d.Work}
}

type hostOpt func(*Options, *fake.Options)

func withFakeArgs(args ...string) hostOpt {
	return func(_ *Options, f *fake.Options) { f.ExtraArgs = append(f.ExtraArgs, args...) }
}

func newHost(t testing.TB, e env, opts ...hostOpt) *Host {
	t.Helper()
	return newHostWith(t, e, nil, opts...)
}

// newHostWith is newHost with the fake adapter replaced by wrap(fake
// adapter) unless wrap is nil.
func newHostWith(t testing.TB, e env, wrap func(*fake.Adapter) harness.Adapter, opts ...hostOpt) *Host {
	t.Helper()
	fo := fake.Options{Binary: fakeBin}
	o := Options{Home: e.home, WorkDir: e.work, RunAs: &Credential{UID: testUID, GID: testUID}}
	for _, f := range opts {
		f(&o, &fo)
	}
	f := fake.New(fo)
	var a harness.Adapter = f
	if wrap != nil {
		a = wrap(f)
	}
	reg, err := harness.NewRegistry(a)
	if err != nil {
		t.Fatal(err)
	}
	o.Registry = reg
	h, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func start(t testing.TB, h *Host, req ptyapi.StartRequest) ptyapi.StartResponse {
	t.Helper()
	if req.Harness == "" {
		req.Harness = fake.Name
	}
	if req.Env == nil {
		req.Env = map[string]string{}
	}
	if _, ok := req.Env["AICLI_FAKE_DELAY"]; !ok {
		req.Env["AICLI_FAKE_DELAY"] = "100ms"
	}
	resp, err := h.Start(context.Background(), req)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return resp
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func screenText(t testing.TB, h *Host) string {
	t.Helper()
	s, err := h.RenderScreen(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(s.Lines, "\n")
}

func status(t testing.TB, h *Host) ptyapi.StatusInfo {
	t.Helper()
	st, err := h.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func waitStatus(t testing.TB, h *Host, want ptyapi.ExecutionStatus) {
	t.Helper()
	eventually(t, 10*time.Second, "status "+string(want), func() bool { return status(t, h).Status == want })
}

func waitScreen(t testing.TB, h *Host, substr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := screenText(t, h)
		if strings.Contains(s, substr) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("screen never showed %q; screen:\n%s", substr, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// collector drains a Subscribe stream into a buffer.
type collector struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	err  error
	done chan struct{}
}

func collect(r io.Reader) *collector {
	c := &collector{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		b := make([]byte, 8192)
		for {
			n, err := r.Read(b)
			c.mu.Lock()
			c.buf.Write(b[:n])
			if err != nil {
				c.err = err
			}
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return c
}

func (c *collector) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

func newSessionID() string { return uuid.NewString() }

// fakeOptions shortens hostOpt literals.
type fakeOptions = fake.Options

// newTestEmulator is the emulator as the host configures it, replies discarded.
func newTestEmulator() emulator {
	return vtscreen.New(DefaultCols, DefaultRows, nil)
}
