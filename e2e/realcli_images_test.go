//go:build e2e && realcli

package e2e_test

// The real-CLI image tier: slow (a cold run debootstraps Debian, npm-installs four CLIs and builds ~2 GB of
// images), so it is compiled only with the realcli build tag and labelled real-cli:
//
//	go test -tags 'e2e realcli' -count=1 -timeout 60m ./e2e/... -ginkgo.label-filter=real-cli -ginkgo.v
//
// The default suite (hack/test.sh: -tags e2e) does not compile this file.

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/images"
	"aicli.dev/aicli/internal/imagebuild"
	"aicli.dev/aicli/internal/runtime"
)

// realCLI is one harness image and what it must contain.
type realCLI struct {
	harness string
	// binary is the CLI's path inside the image.
	binary string
	// version is the pinned version (images/<harness>/Dockerfile, docs/harnesses.md); the image's label and `--version` must say it.
	version string
}

var realCLIs = []realCLI{
	{harness: "claude", binary: "/usr/local/bin/claude", version: "2.1.332"},
	{harness: "codex", binary: "/usr/local/bin/codex", version: "0.171.0"},
	{harness: "gemini", binary: "/usr/local/bin/gemini", version: "0.61.0"},
	{harness: "opencode", binary: "/usr/local/bin/opencode", version: "1.18.33"},
}

// realCLIBase is the base the real-CLI Dockerfiles build FROM.
const realCLIBase = "aicli-base-debian:trixie"

var _ = Describe("Real-CLI guest images", Ordered, Label("real-cli"), func() {
	var builder *imagebuild.Builder

	BeforeAll(func(ctx SpecContext) {
		dir, err := suite.GuestArtifacts(ctx)
		Expect(err).NotTo(HaveOccurred())
		// Exactly the supervisor's builder: shipped definitions, the guest artifacts, the engine client (which
		// can import, so a missing base is made with debootstrap). No pruning: images are cached across runs.
		builder = &imagebuild.Builder{Docker: suite.Client, Defs: images.FS, ArtifactDir: dir, Logger: suite.Logger,
			BuildTimeout: 30 * time.Minute}
	})

	It("has the base image, made locally from images/base when it was missing", func(ctx SpecContext) {
		var lines []string
		start := time.Now()
		Expect(builder.EnsureBase(ctx, realCLIBase, func(l string) { lines = append(lines, l) })).To(Succeed())
		took := time.Since(start)
		img, err := suite.Client.ImageInspect(ctx, realCLIBase)
		Expect(err).NotTo(HaveOccurred())
		defs, err := builder.BaseDefs()
		Expect(err).NotTo(HaveOccurred())
		if img.Config.Labels[imagebuild.LabelManagedBy] == imagebuild.ManagedBy {
			// Ours: labelled with the definition it was made from.
			Expect(img.Config.Labels).To(HaveKeyWithValue(imagebuild.LabelBaseHash, defs[realCLIBase].Hash))
		}
		report("base", realCLIBase, len(lines) > 0, took, img.Size)
	}, SpecTimeout(20*time.Minute))

	for _, c := range realCLIs {
		It("builds the "+c.harness+" image with the pinned CLI, runs `"+c.harness+" --version` on a read-only root, and hits the cache next time",
			func(ctx SpecContext) {
				var lines []string
				start := time.Now()
				ref, err := builder.Ensure(ctx, c.harness, func(l string) { lines = append(lines, l) })
				took := time.Since(start)
				Expect(err).NotTo(HaveOccurred(), "build output:\n%s", tail(lines, 40))
				want, err := builder.Ref(c.harness)
				Expect(err).NotTo(HaveOccurred())
				Expect(ref).To(Equal(want))

				img, err := suite.Client.ImageInspect(ctx, ref)
				Expect(err).NotTo(HaveOccurred())
				Expect(img.Config.Labels).To(HaveKeyWithValue(imagebuild.LabelHarness, c.harness))
				Expect(img.Config.Labels).To(HaveKeyWithValue("aicli.dev/cli-version", c.version))
				Expect(img.Config.Entrypoint).To(Equal([]string{"/usr/local/bin/aicli-guest"}))
				Expect(img.Config.Env).To(ContainElements("AICLI_HARNESS="+c.harness, "HOME=/home/agent"))
				Expect(img.Config.WorkingDir).To(Equal("/workspace"))
				report(c.harness, ref, len(lines) > 0, took, img.Size)

				start = time.Now()
				out, code := runCLIVersion(ctx, ref, c)
				ran := time.Since(start)
				Expect(code).To(Equal(0), "output:\n%s", out)
				Expect(out).To(ContainSubstring(c.version))
				// Nothing to complain about on the read-only root with the runtime's mounts (e.g. a missing config
				// directory the image points the CLI at).
				Expect(strings.ToLower(out)).NotTo(Or(ContainSubstring("warn"), ContainSubstring("error")), out)
				GinkgoWriter.Printf("%s --version: %s\n", c.harness, strings.TrimSpace(out))
				record(fmt.Sprintf("%-8s --version container (create → exit, read-only root): %.2fs", c.harness, ran.Seconds()))

				// Unchanged definition and artifacts: a cache hit, no build output, fast.
				var again []string
				start = time.Now()
				ref2, err := builder.Ensure(ctx, c.harness, func(l string) { again = append(again, l) })
				Expect(err).NotTo(HaveOccurred())
				Expect(ref2).To(Equal(ref))
				Expect(again).To(BeEmpty(), "a cache hit must not build")
				Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second))
			}, SpecTimeout(30*time.Minute))
	}
})

// runCLIVersion runs `<binary> --version` in a container of ref the way the runtime runs conversations (read-only
// root, /tmp tmpfs, no network, capabilities dropped, a bind-mounted home and workspace), as the CLI user 1000:1000,
// and returns its output and exit code. ContainerSpec has no entrypoint override, so the container is created
// through the engine client with the runtime's own host configuration and the run's labels.
func runCLIVersion(ctx context.Context, ref string, c realCLI) (string, int) {
	GinkgoHelper()
	run := suite.NewRun()
	home, work := userDir(), userDir()
	spec := run.Spec("version", ref)
	spec.Mounts = []runtime.Mount{{HostPath: home, ContainerPath: "/home/agent"}, {HostPath: work, ContainerPath: "/workspace"}}
	hc := suite.Runtime.HostConfig(spec)
	resp, err := suite.Client.ContainerCreate(ctx, &container.Config{
		Image: ref, Entrypoint: []string{c.binary}, Cmd: []string{"--version"}, User: "1000:1000",
		Labels: spec.Labels, AttachStdout: true, AttachStderr: true,
	}, hc, nil, nil, spec.Name)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		if CurrentSpecReport().Failed() {
			suite.DumpContainer(ctx, run.ID, resp.ID)
		}
		Expect(suite.Runtime.Remove(ctx, resp.ID)).To(Succeed())
	}, NodeTimeout(time.Minute))
	Expect(suite.Runtime.Start(ctx, resp.ID)).To(Succeed())
	return waitExit(ctx, resp.ID)
}

// userDir returns a temporary directory owned by the CLI user.
func userDir() string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	Expect(os.Chown(dir, 1000, 1000)).To(Succeed())
	return dir
}

// report records one image's build measurement.
func report(name, ref string, built bool, took time.Duration, size int64) {
	how := "cache hit"
	if built {
		how = "built"
	}
	record(fmt.Sprintf("%-8s %-40s %-9s %8.1fs %6d MB", name, ref, how, took.Seconds(), size/1e6))
}

// record prints one measurement, adds it to the Ginkgo report and appends it to $AICLI_REALCLI_REPORT if set.
func record(line string) {
	GinkgoHelper()
	GinkgoWriter.Println("measured: " + line)
	AddReportEntry("measured", line)
	if p := os.Getenv("AICLI_REALCLI_REPORT"); p != "" {
		f, err := os.OpenFile(filepath.Clean(p), os.O_CREATE|os.O_APPEND|os.O_WRONLY, fs.FileMode(0o644))
		Expect(err).NotTo(HaveOccurred())
		_, err = fmt.Fprintln(f, line)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Close()).To(Succeed())
	}
}

func tail(lines []string, n int) string {
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
