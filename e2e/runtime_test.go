//go:build e2e

package e2e_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/e2e/framework"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/runtime/docker"
)

var _ = Describe("Docker runtime", Label("runtime"), func() {
	var run *framework.Run
	BeforeEach(func() { run = suite.NewRun() })

	It("creates, starts, lists by label, streams events and stops with SIGTERM to exit 0", func(ctx SpecContext) {
		evs, errc := suite.Runtime.Events(ctx, map[string]string{framework.LabelTestRun: run.ID})
		id := run.Create(ctx, run.Spec("serve", probeImage, "serve"))

		st, err := suite.Runtime.Inspect(ctx, id)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Status).To(Equal("created"))
		Expect(st.Name).To(Equal(run.ID + "-serve"))
		Expect(st.Image).To(Equal(probeImage))
		Expect(st.Labels).To(HaveKeyWithValue(framework.LabelTestRun, run.ID))

		Expect(suite.Runtime.Start(ctx, id)).To(Succeed())
		Eventually(ctx, func() (string, error) { return suite.ContainerOutput(ctx, id) }).
			WithTimeout(10 * time.Second).Should(ContainSubstring("ready"))

		other := run.Create(ctx, run.Spec("other", probeImage, "serve"))
		_, err = suite.Runtime.Create(ctx, run.Spec("other", probeImage, "serve"))
		Expect(err).To(MatchError(runtime.ErrNameConflict))
		listed, err := suite.Runtime.List(ctx, map[string]string{framework.LabelTestRun: run.ID})
		Expect(err).NotTo(HaveOccurred())
		Expect(listed).To(HaveLen(2))
		byID := map[string]runtime.ContainerState{}
		for _, s := range listed {
			byID[s.ID] = s
		}
		Expect(byID[id].Running).To(BeTrue())
		Expect(byID[id].StartedAt).To(BeTemporally("~", time.Now(), time.Minute))
		Expect(byID[other].Running).To(BeFalse())
		Expect(byID[other].Status).To(Equal("created"))
		// A selector on a key alone matches too; an unknown value matches nothing.
		none, err := suite.Runtime.List(ctx, map[string]string{framework.LabelTestRun: run.ID + "-nope"})
		Expect(err).NotTo(HaveOccurred())
		Expect(none).To(BeEmpty())

		Expect(suite.Runtime.Stop(ctx, id, 10*time.Second)).To(Succeed())
		st, err = suite.Runtime.Inspect(ctx, id)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Running).To(BeFalse())
		Expect(st.ExitCode).To(Equal(0))
		Expect(st.FinishedAt).To(BeTemporally(">=", st.StartedAt))
		Expect(suite.ContainerOutput(ctx, id)).To(ContainSubstring("got SIGTERM"))
		// Stopping a stopped container is fine.
		Expect(suite.Runtime.Stop(ctx, id, time.Second)).To(Succeed())

		Expect(suite.Runtime.Remove(ctx, id)).To(Succeed())
		var seen []runtime.Event
		Eventually(ctx, func() []runtime.EventType {
			for {
				select {
				case ev := <-evs:
					if ev.ID == id {
						seen = append(seen, ev)
					}
					continue
				case err := <-errc:
					Fail("event stream ended: " + err.Error())
				default:
				}
				break
			}
			var types []runtime.EventType
			for _, ev := range seen {
				types = append(types, ev.Type)
			}
			return types
		}).WithTimeout(10 * time.Second).Should(Equal([]runtime.EventType{
			runtime.EventStart, runtime.EventDie, runtime.EventStop, runtime.EventDestroy}))
		die := seen[1]
		Expect(die.ExitCode).To(Equal(0))
		Expect(die.Name).To(Equal(run.ID + "-serve"))
		Expect(die.Labels).To(HaveKeyWithValue(framework.LabelTestRun, run.ID))
		Expect(die.Labels).NotTo(HaveKey("image"))

		_, err = suite.Runtime.Inspect(ctx, id)
		Expect(runtime.IsNotFound(err)).To(BeTrue(), "inspect after remove: %v", err)
		Expect(suite.Runtime.Remove(ctx, id)).To(Succeed(), "remove is idempotent")
		Expect(runtime.IsNotFound(suite.Runtime.Start(ctx, id))).To(BeTrue())
	}, SpecTimeout(time.Minute))

	It("kills a container that ignores SIGTERM after the grace period", func(ctx SpecContext) {
		id := run.Create(ctx, run.Spec("stubborn", probeImage, "ignore-term"))
		Expect(suite.Runtime.Start(ctx, id)).To(Succeed())
		Eventually(ctx, func() (string, error) { return suite.ContainerOutput(ctx, id) }).
			WithTimeout(10 * time.Second).Should(ContainSubstring("ready"))
		start := time.Now()
		Expect(suite.Runtime.Stop(ctx, id, time.Second)).To(Succeed())
		Expect(time.Since(start)).To(BeNumerically(">=", 900*time.Millisecond))
		st, err := suite.Runtime.Inspect(ctx, id)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.ExitCode).To(Equal(137))
	}, SpecTimeout(time.Minute))

	It("samples a running container's CPU time and memory in one shot", Label("runtime-stats"), func(ctx SpecContext) {
		id := run.Create(ctx, run.Spec("stats", probeImage, "serve"))
		Expect(suite.Runtime.Start(ctx, id)).To(Succeed())
		Eventually(ctx, func() (string, error) { return suite.ContainerOutput(ctx, id) }).
			WithTimeout(10 * time.Second).Should(ContainSubstring("ready"))
		start := time.Now()
		st, err := suite.Runtime.Stats(ctx, id)
		Expect(err).NotTo(HaveOccurred())
		Expect(time.Since(start)).To(BeNumerically("<", time.Second), "a one-shot sample awaits no second one")
		Expect(st.CPUNanos).To(BeNumerically(">", 0))
		Expect(st.MemoryBytes).To(BeNumerically(">", 0))
		Expect(st.Read).To(BeTemporally("~", time.Now(), time.Minute))
		Expect(suite.Runtime.Remove(ctx, id)).To(Succeed())
		_, err = suite.Runtime.Stats(ctx, id)
		Expect(runtime.IsNotFound(err)).To(BeTrue(), "stats of a removed container: %v", err)
	}, SpecTimeout(time.Minute))

	It("reports exit codes in state and die events, and reads TTY logs raw", func(ctx SpecContext) {
		evs, _ := suite.Runtime.Events(ctx, map[string]string{framework.LabelTestRun: run.ID})
		out, code := runToExit(ctx, run, "exit7", probeImage, "exit", "7")
		Expect(code).To(Equal(7))
		Expect(out).To(Equal("exiting 7\n"))
		Eventually(ctx, evs).WithTimeout(10 * time.Second).Should(Receive(SatisfyAll(
			HaveField("Type", runtime.EventDie), HaveField("ExitCode", 7))))

		spec := run.Spec("tty", probeImage, "print", "on a tty")
		spec.Tty = true
		id := run.Create(ctx, spec)
		Expect(suite.Runtime.Start(ctx, id)).To(Succeed())
		out, code = waitExit(ctx, id)
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("on a tty\r\n"), "a TTY's output is not multiplexed and carries CRLF")
	}, SpecTimeout(time.Minute))

	It("runs with --network none: only the loopback interface exists", func(ctx SpecContext) {
		out, code := runToExit(ctx, run, "net", probeImage, "netifs")
		Expect(code).To(Equal(0), out)
		Expect(strings.TrimSpace(out)).To(Equal("netifs=lo"))
		raw, err := suite.Runtime.InspectRaw(ctx, run.ID+"-net")
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw.HostConfig.NetworkMode)).To(Equal("none"))
	}, SpecTimeout(time.Minute))

	It("applies the security defaults: no-new-privileges, minimal capabilities, limits, read-only rootfs, no init",
		func(ctx SpecContext) {
			out, code := runToExit(ctx, run, "sec", probeImage, "status")
			Expect(code).To(Equal(0), out)
			raw, err := suite.Runtime.InspectRaw(ctx, run.ID+"-sec")
			Expect(err).NotTo(HaveOccurred())
			hc := raw.HostConfig
			Expect(hc.SecurityOpt).To(ContainElement("no-new-privileges"))
			Expect([]string(hc.CapDrop)).To(Equal([]string{"ALL"}))
			// The engine may report capabilities with or without the CAP_ prefix.
			Expect([]string(hc.CapAdd)).To(HaveEach(WithTransform(func(c string) string {
				return strings.TrimPrefix(c, "CAP_")
			}, BeElementOf(docker.GuestCapabilities))))
			Expect(hc.CapAdd).To(HaveLen(len(docker.GuestCapabilities)))
			Expect(hc.Memory).To(Equal(docker.DefaultMemoryBytes))
			Expect(hc.MemorySwap).To(Equal(docker.DefaultMemoryBytes))
			Expect(hc.PidsLimit).NotTo(BeNil())
			Expect(*hc.PidsLimit).To(Equal(docker.DefaultPidsLimit))
			Expect(hc.ReadonlyRootfs).To(BeTrue())
			Expect(hc.Tmpfs).To(HaveKey("/tmp"))
			Expect(hc.Init).NotTo(BeNil())
			Expect(*hc.Init).To(BeFalse())
			Expect(hc.Privileged).To(BeFalse())

			// What the process itself sees.
			Expect(out).To(ContainSubstring("NoNewPrivs=1"))
			// CAP_CHOWN (0), CAP_DAC_OVERRIDE (1), CAP_KILL (5), CAP_SETGID (6), CAP_SETUID (7) and nothing else.
			Expect(out).To(ContainSubstring("CapEff=00000000000000e3"))
			Expect(out).To(ContainSubstring("CapBnd=00000000000000e3"))
			Expect(out).To(ContainSubstring("pid=1\n"), "the payload is PID 1 (no injected init)")
			Expect(out).To(ContainSubstring("write /probe-write-test=open /probe-write-test: read-only file system"))
			Expect(out).To(ContainSubstring("write /tmp/probe-write-test=ok"))
		}, SpecTimeout(time.Minute))

	It("honours explicit limits in the spec", func(ctx SpecContext) {
		spec := run.Spec("limits", probeImage, "print", "hi")
		spec.MemoryBytes = 256 << 20
		spec.PidsLimit = 64
		spec.NanoCPUs = 500_000_000
		id := run.Create(ctx, spec)
		raw, err := suite.Runtime.InspectRaw(ctx, id)
		Expect(err).NotTo(HaveOccurred())
		Expect(raw.HostConfig.Memory).To(Equal(int64(256 << 20)))
		Expect(*raw.HostConfig.PidsLimit).To(Equal(int64(64)))
		Expect(raw.HostConfig.NanoCPUs).To(Equal(int64(500_000_000)))
	}, SpecTimeout(time.Minute))

	It("bind-mounts host directories, read-write and read-only", func(ctx SpecContext) {
		rw, ro := GinkgoT().TempDir(), GinkgoT().TempDir()
		spec := run.Spec("mounts", probeImage, "write", "/run/aicli/hello", "from-container")
		spec.Mounts = []runtime.Mount{{HostPath: rw, ContainerPath: "/run/aicli"}}
		id := run.Create(ctx, spec)
		Expect(suite.Runtime.Start(ctx, id)).To(Succeed())
		out, code := waitExit(ctx, id)
		Expect(code).To(Equal(0), out)
		Expect(os.ReadFile(filepath.Join(rw, "hello"))).To(Equal([]byte("from-container")))

		spec = run.Spec("mounts-ro", probeImage, "write", "/opt/aicli/bin/x", "nope")
		spec.Mounts = []runtime.Mount{{HostPath: ro, ContainerPath: "/opt/aicli/bin", ReadOnly: true}}
		id = run.Create(ctx, spec)
		Expect(suite.Runtime.Start(ctx, id)).To(Succeed())
		out, code = waitExit(ctx, id)
		Expect(code).To(Equal(1))
		Expect(out).To(ContainSubstring("read-only file system"))
		Expect(filepath.Join(ro, "x")).NotTo(BeAnExistingFile())
	}, SpecTimeout(time.Minute))

	// The probe shows the kernel side; the fake guest image specs show what the real guest needs each one for.
	Describe("capabilities the guest needs as PID 1 (start the CLI as uid 1000, kill its group)", func() {
		It("succeeds with the default set", func(ctx SpecContext) {
			out, code := runToExit(ctx, run, "caps", probeImage, "setuid-child")
			Expect(code).To(Equal(0), out)
			Expect(out).To(ContainSubstring("spawn=ok"))
			Expect(out).To(ContainSubstring("kill=ok"))
		}, SpecTimeout(time.Minute))

		DescribeTable("fails without each one, so none is superfluous",
			func(ctx SpecContext, drop, wantLine string, wantCode int) {
				caps := slices.DeleteFunc(slices.Clone(docker.GuestCapabilities), func(c string) bool { return c == drop })
				rt := docker.New(suite.Client, docker.Options{CapAdd: caps})
				spec := run.Spec("no-"+strings.ToLower(drop), probeImage, "setuid-child")
				spec.Labels = suite.Labels(run.ID)
				id, err := rt.Create(ctx, spec)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(func(ctx SpecContext) { Expect(rt.Remove(ctx, id)).To(Succeed()) })
				Expect(rt.Start(ctx, id)).To(Succeed())
				out, code := waitExit(ctx, id)
				Expect(code).To(Equal(wantCode), out)
				Expect(out).To(ContainSubstring(wantLine))
			},
			Entry("SETUID", "SETUID", "spawn=fork/exec /probe: operation not permitted", 1, SpecTimeout(time.Minute)),
			Entry("SETGID", "SETGID", "spawn=fork/exec /probe: operation not permitted", 1, SpecTimeout(time.Minute)),
			Entry("KILL", "KILL", "kill=operation not permitted", 2, SpecTimeout(time.Minute)),
		)
	})

	It("reaps labeled containers the owner does not know, and nothing else", func(ctx SpecContext) {
		sup := "e2e-" + run.ID
		mk := func(suffix, conv string) string {
			spec := run.Spec(suffix, probeImage, "serve")
			spec.Labels[runtime.LabelSupervisor] = sup
			spec.Labels[runtime.LabelConversation] = conv
			return run.Create(ctx, spec)
		}
		known := mk("known", "known")
		ghost := mk("ghost", "ghost")
		Expect(suite.Runtime.Start(ctx, ghost)).To(Succeed())
		// Same conversation name but another supervisor: not ours to reap.
		foreignSpec := run.Spec("foreign", probeImage, "serve")
		foreignSpec.Labels[runtime.LabelSupervisor] = sup + "-other"
		foreignSpec.Labels[runtime.LabelConversation] = "ghost"
		foreign := run.Create(ctx, foreignSpec)

		reaper := &runtime.Reaper{
			Runtime:  suite.Runtime,
			Selector: map[string]string{runtime.LabelSupervisor: sup},
			IsKnown: func(s runtime.ContainerState) bool {
				return s.Labels[runtime.LabelConversation] == "known"
			},
			Logger: suite.Logger,
		}
		removed, err := reaper.SweepOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(removed).To(Equal([]string{ghost}))
		_, err = suite.Runtime.Inspect(ctx, ghost)
		Expect(runtime.IsNotFound(err)).To(BeTrue())
		for _, id := range []string{known, foreign} {
			_, err := suite.Runtime.Inspect(ctx, id)
			Expect(err).NotTo(HaveOccurred())
		}
	}, SpecTimeout(time.Minute))

	It("reports a missing image as a typed create error (nothing is pulled)", func(ctx SpecContext) {
		_, err := suite.Runtime.Create(ctx, run.Spec("noimg", "aicli-guest-nonexistent:000000000000"))
		Expect(err).To(MatchError(runtime.ErrImageNotFound))
		Expect(err.Error()).To(ContainSubstring("aicli-guest-nonexistent"))

		// Other not-founds are not mistaken for a missing image or a missing container.
		spec := run.Spec("nonet", probeImage)
		spec.Network = "aicli-no-such-network-" + run.ID
		id := run.Create(ctx, spec)
		err = suite.Runtime.Start(ctx, id)
		Expect(err).To(MatchError(ContainSubstring(spec.Network)))
		Expect(runtime.IsNotFound(err)).To(BeFalse(), "the container exists: %v", err)
	}, SpecTimeout(time.Minute))

	It("reports an OOM kill at the memory limit", func(ctx SpecContext) {
		spec := run.Spec("oom", probeImage, "alloc", "256")
		spec.MemoryBytes = 32 << 20
		id := run.Create(ctx, spec)
		Expect(suite.Runtime.Start(ctx, id)).To(Succeed())
		out, code := waitExit(ctx, id)
		Expect(code).To(Equal(137), out)
		Expect(out).NotTo(ContainSubstring("allocated"))
		st, err := suite.Runtime.Inspect(ctx, id)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.OOMKilled).To(BeTrue())
	}, SpecTimeout(time.Minute))
})
