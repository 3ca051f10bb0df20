//go:build e2e

package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/e2e/framework"
	"aicli.dev/aicli/internal/imagebuild"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "aicli e2e")
}

// Suite-wide state, set once in BeforeSuite. Teardown is a DeferCleanup registered by BeforeSuite: Ginkgo allows
// one AfterSuite per suite and this file leaves it to other spec files.
var (
	suite *framework.Suite
	// probeArtifacts holds the probe test payload; probeBuilder builds e2e/testdata/images/*.
	probeArtifacts string
	probeBuilder   *imagebuild.Builder
	probeImage     string
)

var _ = BeforeSuite(func(ctx SpecContext) {
	s, err := framework.NewSuite()
	Expect(err).NotTo(HaveOccurred())
	// The gate: no Docker is a failure of every spec, never a skip.
	Expect(framework.Gate(ctx, s.Runtime)).To(Succeed())
	suite = s
	// Suite teardown (registered here, so other files stay free to add their own AfterSuite): remove whatever
	// this suite process leaked, fail if that was anything, and sweep stale containers of dead runs.
	DeferCleanup(func(ctx SpecContext) {
		leaked, err := suite.SweepSuite(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(leaked).To(BeEmpty(), "specs leaked containers (removed now)")
		_, err = suite.SweepStale(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(suite.Close()).To(Succeed())
	}, NodeTimeout(2*time.Minute))

	removed, err := suite.SweepStale(ctx)
	Expect(err).NotTo(HaveOccurred(), "sweep stale test containers")
	if len(removed) > 0 {
		GinkgoWriter.Printf("removed %d stale test containers\n", len(removed))
	}

	// Compile what the specs run (the guest binaries and the supervisor) here rather than inside a spec's
	// timeout: on a fresh machine this is a cold CGO_ENABLED=0 -trimpath build of the whole module graph, which
	// shares nothing with the unit tests' build cache and takes minutes on two cores.
	supervisorBins(ctx)

	probeArtifacts = GinkgoT().TempDir()
	Expect(framework.BuildBinaries(ctx, suite.Root, probeArtifacts,
		map[string]string{"probe": "./e2e/testdata/probe"})).To(Succeed())
	probeBuilder = &imagebuild.Builder{
		Docker:      suite.Client,
		Defs:        os.DirFS(filepath.Join(suite.Root, "e2e", "testdata", "images")),
		ArtifactDir: probeArtifacts,
		Logger:      suite.Logger,
		PruneOld:    true, // older probe images (from earlier probe sources) go away
	}
	probeImage, err = probeBuilder.Ensure(ctx, "probe", nil)
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(15*time.Minute))

// runToExit creates and starts a container for cmd on image, waits for it to exit and returns its output and
// exit code.
func runToExit(ctx context.Context, run *framework.Run, suffix, image string, cmd ...string) (string, int) {
	GinkgoHelper()
	id := run.Create(ctx, run.Spec(suffix, image, cmd...))
	Expect(suite.Runtime.Start(ctx, id)).To(Succeed())
	return waitExit(ctx, id)
}

func waitExit(ctx context.Context, id string) (string, int) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		st, err := suite.Runtime.Inspect(ctx, id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Status).To(Equal("exited"))
	}).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())
	st, err := suite.Runtime.Inspect(ctx, id)
	Expect(err).NotTo(HaveOccurred())
	out, err := suite.ContainerOutput(ctx, id)
	Expect(err).NotTo(HaveOccurred())
	return out, st.ExitCode
}
