//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"

	"aicli.dev/aicli/e2e/framework"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/ptyclient"
	"aicli.dev/aicli/internal/gateway"
	"aicli.dev/aicli/internal/gateway/gatewaytest"
	rt "aicli.dev/aicli/internal/runtime"
)

// The supervisor–guest inversion end to end: a fake-harness guest container launched through the Docker runtime dials back over
// the side channel and the supervisor side drives its PTY; teardown by SIGTERM; attacks from the CLI user; and the
// transparent stdio proxy of the same image.
var _ = Describe("Supervised guest", Ordered, Label("guest"), func() {
	var (
		fakeImage string
		gw        *gateway.Gateway
	)

	BeforeAll(func(ctx SpecContext) {
		// The shipped fake definition and the static guest binaries, built once per suite like the supervisor does.
		var err error
		fakeImage, err = suite.GuestImage(ctx, "fake")
		Expect(err).NotTo(HaveOccurred())

		gw, err = newGuestGateway(GinkgoT().TempDir(), suite.Logger)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(gw.Close)
	}, NodeTimeout(5*time.Minute))

	// launch prepares a conversation, creates and starts its container through the runtime (the run's labels,
	// launch env, side-channel directory and a durable home mounted) and waits for the guest's handshake.
	launch := func(ctx context.Context, run *framework.Run, suffix string) (string, *gateway.GuestConn, *ptyclient.Client) {
		GinkgoHelper()
		l, err := gw.Prepare(ctx, framework.NewRunID(suffix))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() error { return gw.Release(l.ConversationID) })
		id := run.Create(ctx, supervisedSpec(run.Spec(suffix, fakeImage), l, cliHome()))
		Expect(suite.Runtime.Start(ctx, id)).To(Succeed())
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		conn, err := gw.WaitGuest(wctx, l.ConversationID)
		Expect(err).NotTo(HaveOccurred(), "the guest never completed the handshake")
		return id, conn, ptyclient.New(conn.HTTPClient(), gateway.BaseURL)
	}

	It("drives the fake CLI: reply on the screen and in the byte stream, BUSY → IDLE, resize, !ask waits for input",
		func(ctx SpecContext) {
			run := suite.NewRun()
			_, _, pty := launch(ctx, run, "drive")

			_, err := pty.Start(ctx, ptyapi.StartRequest{Harness: "fake",
				Env: map[string]string{"AICLI_FAKE_DELAY": "1200ms"}})
			Expect(err).NotTo(HaveOccurred())
			st, err := pty.Status(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Alive).To(BeTrue())
			Expect(st.Harness).To(Equal("fake"))
			// STARTING until the CLI's first screen, then IDLE, and nothing in between. The fake CLI usually draws
			// its prompt before the first Status call arrives, so STARTING itself is pinned down by the next spec.
			Expect(st.Status).To(BeElementOf(ptyapi.StatusStarting, ptyapi.StatusIdle))
			seen := watchStatuses(ctx, pty, ptyapi.StatusIdle, 30*time.Second)
			Expect(dedup(append([]ptyapi.ExecutionStatus{st.Status}, seen...))).To(Or(
				Equal([]ptyapi.ExecutionStatus{ptyapi.StatusStarting, ptyapi.StatusIdle}),
				Equal([]ptyapi.ExecutionStatus{ptyapi.StatusIdle})))

			stream := subscribe(ctx, pty)
			Expect(pty.SendMessage(ctx, "hello over the side channel")).To(Succeed())
			seen = watchStatuses(ctx, pty, ptyapi.StatusIdle, 30*time.Second, ptyapi.StatusBusy)
			Expect(seen).To(ContainElement(ptyapi.StatusBusy), "the turn takes 1.2 s: BUSY is observed")
			Expect(seen).NotTo(ContainElement(ptyapi.StatusWaitingForInput))
			Expect(screenText(ctx, pty)).To(ContainSubstring("fake[turn 1]: hello over the side channel"))
			Eventually(stream.String).WithTimeout(10 * time.Second).
				Should(ContainSubstring("fake[turn 1]: hello over the side channel"))
			Expect(stream.String()).To(ContainSubstring("\x1b["), "the stream carries the CLI's raw bytes, escapes included")

			Expect(pty.Resize(ctx, 100, 30)).To(Succeed())
			Eventually(ctx, func(g Gomega) {
				scr, err := pty.RenderScreen(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(scr.Cols).To(Equal(100))
				g.Expect(scr.Rows).To(Equal(30))
				g.Expect(scr.Lines).To(HaveLen(30))
				// The CLI got SIGWINCH and redrew its footer at the new size.
				g.Expect(strings.Join(scr.Lines, "\n")).To(ContainSubstring("cols=100 rows=30"))
			}).WithTimeout(10 * time.Second).Should(Succeed())

			Expect(pty.SendMessage(ctx, "!ask may I")).To(Succeed())
			Eventually(ctx, statusOf(pty)).WithTimeout(15 * time.Second).Should(Equal(ptyapi.StatusWaitingForInput))
			// A permission prompt is not idle: it stays WAITING_FOR_INPUT until answered.
			Consistently(ctx, statusOf(pty)).WithTimeout(time.Second).Should(Equal(ptyapi.StatusWaitingForInput))
			Expect(screenText(ctx, pty)).To(ContainSubstring("Do you want to proceed? (y/n)"))
			Expect(pty.SendString(ctx, "y")).To(Succeed())
			seen = watchStatuses(ctx, pty, ptyapi.StatusIdle, 30*time.Second, ptyapi.StatusBusy)
			Expect(seen[0]).To(BeElementOf(ptyapi.StatusWaitingForInput, ptyapi.StatusBusy))
			Expect(seen).To(ContainElement(ptyapi.StatusBusy), "the answered prompt runs the turn")
			scr := screenText(ctx, pty)
			Expect(scr).To(ContainSubstring("permission: granted"))
			Expect(scr).To(ContainSubstring("fake[turn 2]: !ask may I"))
			Eventually(stream.String).WithTimeout(10 * time.Second).Should(ContainSubstring("fake[turn 2]: !ask may I"))
		}, SpecTimeout(2*time.Minute))

	It("reports STARTING, never a guessed IDLE, while the CLI has not drawn its prompt", func(ctx SpecContext) {
		run := suite.NewRun()
		_, _, pty := launch(ctx, run, "starting")
		// The fake CLI's internal --sleep-forever flag: it runs but never draws anything.
		_, err := pty.Start(ctx, ptyapi.StartRequest{Harness: "fake", Args: []string{"--sleep-forever"}})
		Expect(err).NotTo(HaveOccurred())
		Consistently(ctx, func(g Gomega) {
			st, err := pty.Status(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.Alive).To(BeTrue())
			g.Expect(st.Status).To(Equal(ptyapi.StatusStarting))
		}).WithTimeout(1500 * time.Millisecond).WithPolling(50 * time.Millisecond).Should(Succeed())
		// A message is held, not typed into a CLI that is not ready.
		Expect(pty.SendMessage(ctx, "too early")).To(Succeed())
		Consistently(ctx, func() int {
			st, _ := pty.Status(ctx)
			return st.PendingMessages
		}).WithTimeout(500 * time.Millisecond).Should(Equal(1))
	}, SpecTimeout(time.Minute))

	It("tears down on SIGTERM: the guest exits 0, the container is removed and none with the run label remains",
		func(ctx SpecContext) {
			run := suite.NewRun()
			id, conn, pty := launch(ctx, run, "sigterm")
			_, err := pty.Start(ctx, ptyapi.StartRequest{Harness: "fake", Env: map[string]string{"AICLI_FAKE_DELAY": "0s"}})
			Expect(err).NotTo(HaveOccurred())
			Eventually(ctx, statusOf(pty)).WithTimeout(30 * time.Second).Should(Equal(ptyapi.StatusIdle))

			Expect(suite.Runtime.Stop(ctx, id, 10*time.Second)).To(Succeed())
			st, err := suite.Runtime.Inspect(ctx, id)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Status).To(Equal("exited"))
			Expect(st.ExitCode).To(Equal(0), "SIGTERM: the guest stops the CLI and exits cleanly")
			Eventually(conn.Done()).WithTimeout(10*time.Second).Should(BeClosed(), "the side channel closes with the guest")
			logs, err := suite.ContainerOutput(ctx, id)
			Expect(err).NotTo(HaveOccurred())
			Expect(logs).To(ContainSubstring("terminating: stopping the cli"))

			Expect(suite.Runtime.Remove(ctx, id)).To(Succeed())
			_, err = suite.Runtime.Inspect(ctx, id)
			Expect(rt.IsNotFound(err)).To(BeTrue(), "inspect after remove: %v", err)
			left, err := suite.Runtime.List(ctx, map[string]string{framework.LabelTestRun: run.ID})
			Expect(err).NotTo(HaveOccurred())
			Expect(left).To(BeEmpty())
		}, SpecTimeout(2*time.Minute))

	It("keeps the CLI user out of the guest's environment and memory, and off every network but loopback",
		func(ctx SpecContext) {
			run := suite.NewRun()
			id, _, pty := launch(ctx, run, "attacks")
			_, err := pty.Start(ctx, ptyapi.StartRequest{Harness: "fake", Env: map[string]string{"AICLI_FAKE_DELAY": "0s"}})
			Expect(err).NotTo(HaveOccurred())
			Eventually(ctx, statusOf(pty)).WithTimeout(30 * time.Second).Should(Equal(ptyapi.StatusIdle))

			// The fake CLI itself (uid 1000, the guest's child, same PID namespace: PID 1 is the guest) tries.
			turn := 0
			ask := func(msg string) string {
				GinkgoHelper()
				turn++
				Expect(pty.SendMessage(ctx, msg)).To(Succeed())
				want := fmt.Sprintf("fake[turn %d]: %s", turn, msg)
				var text string
				Eventually(ctx, func() string { text = screenText(ctx, pty); return text }).
					WithTimeout(15 * time.Second).Should(ContainSubstring(want))
				return text
			}
			Expect(ask("!id")).To(MatchRegexp(`id: uid=1000 gid=1000 `))
			// Controls: the reader works, and the CLI reads its own process's files.
			Expect(ask("!read /proc/self/environ")).To(ContainSubstring("read /proc/self/environ: ok"))
			Expect(ask("!read /proc/self/maps")).To(ContainSubstring("read /proc/self/maps: ok"))
			for _, p := range []string{"/proc/1/environ", "/proc/1/mem", "/proc/1/maps"} {
				Expect(ask("!read "+p)).To(MatchRegexp(`read %s: error: open %s: permission denied`, p, p),
					"the CLI user must not read the guest's %s", p)
			}
			// No route at all: /proc/net/route is a 128-byte header plus one 128-byte line per route.
			Expect(ask("!read /proc/net/route")).To(ContainSubstring("read /proc/net/route: ok 128 bytes"))

			// Interfaces as the CLI user in the guest container's network namespace: loopback only.
			probe := run.Spec("netifs", probeImage, "netifs")
			probe.Network = "container:" + id
			probe.User = "1000:1000"
			out, code := runSpecToExit(ctx, run, probe)
			Expect(code).To(Equal(0), out)
			Expect(out).To(ContainSubstring("netifs=lo\n"))

			// A connect from the guest's network namespace to a listener on the Docker bridge gateway fails with
			// "network is unreachable"; the same connect from a bridge container's namespace succeeds (the control).
			gwIP := bridgeGateway(ctx, suite.Client)
			ln, err := net.Listen("tcp", net.JoinHostPort(gwIP, "0"))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(ln.Close)
			go acceptAndClose(ln)
			bridged := run.Spec("bridged", probeImage, "serve")
			bridged.Network = "bridge"
			bid := run.Create(ctx, bridged)
			Expect(suite.Runtime.Start(ctx, bid)).To(Succeed())
			Expect(dialFromNetns(ctx, hostPID(ctx, bid), ln.Addr().String())).To(Succeed(),
				"control: a bridge container reaches the gateway listener")
			err = dialFromNetns(ctx, hostPID(ctx, id), ln.Addr().String())
			Expect(err).To(MatchError(syscall.ENETUNREACH), "the guest container must have no route to the host")
		}, SpecTimeout(2*time.Minute))

	It("is a transparent stdio proxy without the bootstrap env: a TTY answers like the bare CLI, logs are verbatim",
		func(ctx SpecContext) {
			run := suite.NewRun()
			spec := run.Spec("tty", fakeImage)
			spec.Tty = true
			spec.OpenStdin = true
			spec.Env = []string{"AICLI_FAKE_DELAY=0s"}
			spec.Mounts = []rt.Mount{{HostPath: cliHome(), ContainerPath: "/home/agent"}}
			id := run.Create(ctx, spec)
			resp, err := suite.Client.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: true,
				Stdout: true, Stderr: true})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(resp.Close)
			out := &syncBuffer{}
			go func() { _, _ = io.Copy(out, resp.Reader) }() // a TTY stream is raw, not multiplexed
			Expect(suite.Runtime.Start(ctx, id)).To(Succeed())

			Eventually(out.String).WithTimeout(15 * time.Second).Should(ContainSubstring("? for shortcuts"))
			Expect(out.String()).To(ContainSubstring("\x1b[?2004h"), "the CLI's own escape sequences pass through")
			Expect(suite.Client.ContainerResize(ctx, id, container.ResizeOptions{Height: 30, Width: 100})).To(Succeed())
			Eventually(out.String).WithTimeout(15 * time.Second).Should(ContainSubstring("cols=100 rows=30"))
			_, err = io.WriteString(resp.Conn, "plain stdin\r")
			Expect(err).NotTo(HaveOccurred())
			Eventually(out.String).WithTimeout(15 * time.Second).Should(ContainSubstring("fake[turn 1]: plain stdin"))

			Expect(suite.Runtime.Stop(ctx, id, 10*time.Second)).To(Succeed())
			st, err := suite.Runtime.Inspect(ctx, id)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.ExitCode).To(Equal(0))
			logs, err := suite.ContainerOutput(ctx, id)
			Expect(err).NotTo(HaveOccurred())
			// The engine's log holds the CLI's bytes as it wrote them: prompt line, reply and escape sequences.
			Expect(logs).To(ContainSubstring("? for shortcuts"))
			Expect(logs).To(ContainSubstring("> "))
			Expect(logs).To(ContainSubstring("fake[turn 1]: plain stdin"))
			Expect(logs).To(ContainSubstring("\x1b[?2004h"))
		}, SpecTimeout(2*time.Minute))
})

// supervisedSpec turns base into a supervised guest container: the launch's bootstrap env, the side-channel
// directory (the directory, never the socket file) and the CLI's durable home.
func supervisedSpec(base rt.ContainerSpec, l *gateway.Launch, home string) rt.ContainerSpec {
	spec := base
	spec.Labels = maps.Clone(base.Labels)
	for k, v := range l.Env {
		spec.Env = append(spec.Env, k+"="+v)
	}
	spec.Mounts = append(append([]rt.Mount(nil), base.Mounts...),
		rt.Mount{HostPath: l.HostDir, ContainerPath: l.ContainerDir},
		rt.Mount{HostPath: home, ContainerPath: "/home/agent"})
	return spec
}

// newGuestGateway starts a gateway on dataDir with an in-memory token store.
func newGuestGateway(dataDir string, log *slog.Logger) (*gateway.Gateway, error) {
	return gateway.New(gateway.Options{DataDir: dataDir, Tokens: gatewaytest.NewTokens(), Logger: log})
}

// statusOf polls the CLI's execution status.
func statusOf(pty ptyapi.PTY) func(context.Context) (ptyapi.ExecutionStatus, error) {
	return func(ctx context.Context) (ptyapi.ExecutionStatus, error) {
		st, err := pty.Status(ctx)
		return st.Status, err
	}
}

// watchStatuses polls Status until it reads until (after having read every status in after, in any order) and
// returns the distinct consecutive statuses seen, starting with the first read.
func watchStatuses(ctx context.Context, pty ptyapi.PTY, until ptyapi.ExecutionStatus, timeout time.Duration,
	after ...ptyapi.ExecutionStatus) []ptyapi.ExecutionStatus {
	GinkgoHelper()
	var seen []ptyapi.ExecutionStatus
	need := map[ptyapi.ExecutionStatus]bool{}
	for _, s := range after {
		need[s] = true
	}
	Eventually(ctx, func(g Gomega) {
		st, err := pty.Status(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		if len(seen) == 0 || seen[len(seen)-1] != st.Status {
			seen = append(seen, st.Status)
		}
		delete(need, st.Status)
		g.Expect(need).To(BeEmpty())
		g.Expect(st.Status).To(Equal(until))
	}).WithTimeout(timeout).WithPolling(5*time.Millisecond).Should(Succeed(), "statuses seen: %v", seen)
	return seen
}

// dedup drops consecutive repeats.
func dedup(s []ptyapi.ExecutionStatus) []ptyapi.ExecutionStatus {
	var out []ptyapi.ExecutionStatus
	for _, x := range s {
		if len(out) == 0 || out[len(out)-1] != x {
			out = append(out, x)
		}
	}
	return out
}

// screenText renders the screen and joins its lines.
func screenText(ctx context.Context, pty ptyapi.PTY) string {
	GinkgoHelper()
	scr, err := pty.RenderScreen(ctx)
	Expect(err).NotTo(HaveOccurred())
	return strings.Join(scr.Lines, "\n")
}

// subscribe collects the raw PTY byte stream from now on until the spec ends.
func subscribe(ctx context.Context, pty ptyapi.PTY) *syncBuffer {
	GinkgoHelper()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rc, err := pty.Subscribe(sctx)
	Expect(err).NotTo(HaveOccurred())
	b := &syncBuffer{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(b, rc)
	}()
	DeferCleanup(func() {
		cancel()
		_ = rc.Close()
		<-done
	})
	return b
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runSpecToExit creates and starts spec, waits for it to exit and returns its output and exit code.
func runSpecToExit(ctx context.Context, run *framework.Run, spec rt.ContainerSpec) (string, int) {
	GinkgoHelper()
	id := run.Create(ctx, spec)
	Expect(suite.Runtime.Start(ctx, id)).To(Succeed())
	return waitExit(ctx, id)
}

// hostPID is the host PID of a running container's main process.
func hostPID(ctx context.Context, id string) int {
	GinkgoHelper()
	raw, err := suite.Runtime.InspectRaw(ctx, id)
	Expect(err).NotTo(HaveOccurred())
	Expect(raw.State).NotTo(BeNil())
	Expect(raw.State.Pid).To(BeNumerically(">", 0), "container %s is not running", id)
	return raw.State.Pid
}

// bridgeGateway is the host's IPv4 address on Docker's default bridge (the host as seen from bridge containers):
// the address of the bridge's host interface (the engine here leaves IPAM's Gateway field empty).
func bridgeGateway(ctx context.Context, cli client.APIClient) string {
	GinkgoHelper()
	nw, err := cli.NetworkInspect(ctx, "bridge", network.InspectOptions{})
	Expect(err).NotTo(HaveOccurred())
	name := nw.Options["com.docker.network.bridge.name"]
	if name == "" {
		name = "docker0"
	}
	ifc, err := net.InterfaceByName(name)
	Expect(err).NotTo(HaveOccurred(), "bridge interface %s", name)
	addrs, err := ifc.Addrs()
	Expect(err).NotTo(HaveOccurred())
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	Fail(fmt.Sprintf("bridge interface %s has no IPv4 address: %v", name, addrs))
	return ""
}

func acceptAndClose(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = c.Close()
	}
}

// dialFromNetns connects to addr over TCP from inside the network namespace of host process pid. It runs on a
// dedicated OS thread that enters the namespace and is never returned to the Go scheduler (it exits with the
// goroutine). Routing depends on the namespace, not on the uid, so this is what any process there would get.
func dialFromNetns(ctx context.Context, pid int, addr string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // no Unlock: the thread, now in another namespace, dies with this goroutine
		f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil {
			errc <- fmt.Errorf("open netns: %w", err)
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns: %w", err)
			return
		}
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			errc <- err
			return
		}
		errc <- c.Close()
	}()
	err := <-errc
	var se syscall.Errno
	if errors.As(err, &se) {
		return fmt.Errorf("dial %s from netns of pid %d: %w", addr, pid, se)
	}
	return err
}
