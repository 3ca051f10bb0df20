//go:build e2e

package e2e_test

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/e2e/framework"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/runtime/docker"
)

// The fake-harness guest image built from the shipped definition: the real guest daemon as PID 1 wrapping the
// fake CLI, run through the runtime with its security defaults.
var _ = Describe("Fake guest image", Ordered, Label("guest-image"), func() {
	var fakeImage string

	BeforeAll(func(ctx SpecContext) {
		var err error
		fakeImage, err = suite.GuestImage(ctx, "fake")
		Expect(err).NotTo(HaveOccurred())
		Expect(fakeImage).To(HavePrefix("aicli-guest-fake:"))
	}, NodeTimeout(5*time.Minute))

	It("has the guest as entrypoint, the harness env and the directory skeleton with the CLI user's ownership",
		func(ctx SpecContext) {
			img, err := suite.Client.ImageInspect(ctx, fakeImage)
			Expect(err).NotTo(HaveOccurred())
			Expect([]string(img.Config.Entrypoint)).To(Equal([]string{"/usr/local/bin/aicli-guest"}))
			Expect(img.Config.Env).To(ContainElements("AICLI_HARNESS=fake", "HOME=/home/agent"))
			Expect(img.Config.Labels).To(HaveKeyWithValue("aicli.dev/harness", "fake"))

			run := suite.NewRun()
			id := run.Create(ctx, run.Spec("tree", fakeImage))
			want := map[string]struct {
				uid  int
				mode int64
			}{
				"/home/agent": {1000, 0o755}, "/workspace": {1000, 0o755}, "/run/aicli": {0, 0o755},
				"/tmp": {0, 0o1777}, "/opt/aicli/bin": {0, 0o755},
			}
			for p, w := range want {
				rc, _, err := suite.Client.CopyFromContainer(ctx, id, p)
				Expect(err).NotTo(HaveOccurred(), p)
				h, err := tar.NewReader(rc).Next()
				_ = rc.Close()
				Expect(err).NotTo(HaveOccurred(), p)
				Expect(h.Typeflag).To(Equal(byte(tar.TypeDir)), p)
				Expect(h.Uid).To(Equal(w.uid), p)
				Expect(h.Mode&0o7777).To(Equal(w.mode), p)
			}
			for _, f := range []string{"/usr/local/bin/aicli-guest", "/usr/local/bin/aicli-fake-cli", "/etc/passwd"} {
				st, err := suite.Client.ContainerStatPath(ctx, id, f)
				Expect(err).NotTo(HaveOccurred(), f)
				Expect(st.Mode.IsRegular()).To(BeTrue(), f)
			}
		}, SpecTimeout(time.Minute))

	It("runs transparently: the CLI answers on stdio as uid 1000, logs carry its output, SIGTERM exits 0",
		func(ctx SpecContext) {
			id, att := startFake(ctx, fakeImage, "transparent", cliHome())
			att.Send("hello from e2e\r")
			Eventually(att.Output).
				WithTimeout(15 * time.Second).Should(ContainSubstring("fake[turn 1]: hello from e2e"))
			att.Send("!id\r")
			Eventually(att.Output).
				WithTimeout(15 * time.Second).Should(MatchRegexp(`uid=1000\b`))

			Expect(suite.Runtime.Stop(ctx, id, 10*time.Second)).To(Succeed())
			st, err := suite.Runtime.Inspect(ctx, id)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.ExitCode).To(Equal(0), "the guest handles SIGTERM: stops the CLI and exits 0")
		}, SpecTimeout(2*time.Minute))

	It("exits with the CLI's exit code when the CLI dies", func(ctx SpecContext) {
		id, att := startFake(ctx, fakeImage, "crash", cliHome())
		att.Send("!crash\r")
		out, code := waitExit(ctx, id)
		Expect(code).To(Equal(3), out)
	}, SpecTimeout(2*time.Minute))

	It("seeds and uses a durable home owned by the CLI user (as the supervisor prepares it)", func(ctx SpecContext) {
		home := cliHome()
		_, att := startFake(ctx, fakeImage, "home", home)
		att.Send("remember me\r")
		Eventually(att.Output).
			WithTimeout(15 * time.Second).Should(ContainSubstring("fake[turn 1]: remember me"))

		// The harness's seed file and the CLI's native session store landed on the host, owned by uid 1000.
		cfg, err := os.Stat(filepath.Join(home, ".fake", "config.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Sys().(*syscall.Stat_t).Uid).To(Equal(uint32(1000)))
		sessions, err := filepath.Glob(filepath.Join(home, ".fake", "sessions", "*.jsonl"))
		Expect(err).NotTo(HaveOccurred())
		Expect(sessions).To(HaveLen(1))
		data, err := os.ReadFile(sessions[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(ContainSubstring("remember me"))
		st, err := os.Stat(sessions[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Sys().(*syscall.Stat_t).Uid).To(Equal(uint32(1000)))
	}, SpecTimeout(2*time.Minute))
	DescribeTable("needs every one of its capabilities",
		func(ctx SpecContext, drop, wantLog string) {
			caps := slices.DeleteFunc(slices.Clone(docker.GuestCapabilities), func(c string) bool { return c == drop })
			rt := docker.New(suite.Client, docker.Options{CapAdd: caps})
			run := suite.NewRun()
			spec := run.Spec("no-"+strings.ToLower(drop), fakeImage)
			spec.Labels = suite.Labels(run.ID)
			spec.OpenStdin = true
			spec.Mounts = []runtime.Mount{{HostPath: cliHome(), ContainerPath: "/home/agent"}}
			id, err := rt.Create(ctx, spec)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx SpecContext) {
				if CurrentSpecReport().Failed() {
					suite.DumpContainer(ctx, run.ID, id)
				}
				Expect(rt.Remove(ctx, id)).To(Succeed())
			})
			Expect(rt.Start(ctx, id)).To(Succeed())
			// Give the guest time to launch (or fail to), then stop it: the stop path needs KILL.
			Eventually(ctx, func() (string, error) { return suite.ContainerOutput(ctx, id) }).
				WithTimeout(15 * time.Second).Should(Or(ContainSubstring(`"cli started"`), ContainSubstring(`"start cli"`)))
			Expect(rt.Stop(ctx, id, 10*time.Second)).To(Succeed())
			Expect(suite.ContainerOutput(ctx, id)).To(MatchRegexp(wantLog))
		},
		Entry("SETUID: launching the CLI as uid 1000", "SETUID", `fork/exec /usr/local/bin/aicli-fake-cli: operation not permitted`, SpecTimeout(time.Minute)),
		Entry("SETGID: launching the CLI as gid 1000", "SETGID", `fork/exec /usr/local/bin/aicli-fake-cli: operation not permitted`, SpecTimeout(time.Minute)),
		Entry("KILL: stopping the CLI's process group", "KILL", `sigterm: operation not permitted`, SpecTimeout(time.Minute)),
		Entry("DAC_OVERRIDE: seeding the home owned by uid 1000", "DAC_OVERRIDE", `/home/agent\S*: permission denied`, SpecTimeout(time.Minute)),
		Entry("CHOWN: handing seeded files to uid 1000", "CHOWN", `chown /home/agent\S*: operation not permitted`, SpecTimeout(time.Minute)),
	)
})

// cliHome returns a fresh durable-home directory prepared the way the supervisor prepares one: owned by the CLI
// user (uid/gid 1000), mode 0700. The root filesystem is read-only, so the CLI's home must be a mount.
func cliHome() string {
	GinkgoHelper()
	home := GinkgoT().TempDir()
	Expect(os.Chown(home, 1000, 1000)).To(Succeed())
	Expect(os.Chmod(home, 0o700)).To(Succeed())
	return home
}

// startFake runs the fake guest image through the runtime with home mounted as the CLI's durable home, attached
// from before start, and waits for the fake CLI's idle prompt.
func startFake(ctx context.Context, image, suffix, home string) (string, *framework.Attached) {
	GinkgoHelper()
	run := suite.NewRun()
	spec := run.Spec(suffix, image)
	spec.OpenStdin = true
	spec.Env = []string{"AICLI_FAKE_DELAY=0s"}
	spec.Mounts = []runtime.Mount{{HostPath: home, ContainerPath: "/home/agent"}}
	id := run.Create(ctx, spec)
	att := suite.Attach(ctx, id)
	Expect(suite.Runtime.Start(ctx, id)).To(Succeed())
	Eventually(att.Output).WithTimeout(15 * time.Second).Should(ContainSubstring("? for shortcuts"))
	return id, att
}
