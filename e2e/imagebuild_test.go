//go:build e2e

package e2e_test

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing/fstest"
	"time"

	"github.com/docker/docker/api/types/image"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/internal/imagebuild"
)

var _ = Describe("On-demand guest image builds", Label("imagebuild"), func() {
	It("is a cache hit when the definition and artifacts are unchanged", func(ctx SpecContext) {
		var lines []string
		start := time.Now()
		ref, err := probeBuilder.Ensure(ctx, "probe", func(l string) { lines = append(lines, l) })
		took := time.Since(start)
		Expect(err).NotTo(HaveOccurred())
		Expect(ref).To(Equal(probeImage))
		Expect(lines).To(BeEmpty(), "a cache hit must not build")
		Expect(took).To(BeNumerically("<", time.Second))
		GinkgoWriter.Printf("cache hit took %v\n", took)
	}, SpecTimeout(time.Minute))

	It("rebuilds when an artifact changes, labels the image, and shares one build between concurrent callers",
		func(ctx SpecContext) {
			// A copy of the probe with random trailing bytes: still a valid ELF, but new content → new tag.
			data, err := os.ReadFile(filepath.Join(probeArtifacts, "probe"))
			Expect(err).NotTo(HaveOccurred())
			data = append(data, []byte(rand.Text())...)
			dir := GinkgoT().TempDir()
			Expect(os.WriteFile(filepath.Join(dir, "probe"), data, 0o755)).To(Succeed())
			b := &imagebuild.Builder{Docker: suite.Client, Defs: probeBuilder.Defs, ArtifactDir: dir, Logger: suite.Logger}
			want, err := b.Ref("probe")
			Expect(err).NotTo(HaveOccurred())
			Expect(want).NotTo(Equal(probeImage))
			DeferCleanup(func(ctx SpecContext) {
				_, err := suite.Client.ImageRemove(ctx, want, image.RemoveOptions{PruneChildren: true})
				Expect(err).NotTo(HaveOccurred())
			})

			const callers = 4
			var wg sync.WaitGroup
			var mu sync.Mutex
			refs := make([]string, callers)
			errs := make([]error, callers)
			lines := make([][]string, callers)
			for i := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer GinkgoRecover()
					refs[i], errs[i] = b.Ensure(ctx, "probe", func(l string) {
						mu.Lock()
						lines[i] = append(lines[i], l)
						mu.Unlock()
					})
				}()
			}
			wg.Wait()
			steps := 0
			for i := range callers {
				Expect(errs[i]).NotTo(HaveOccurred())
				Expect(refs[i]).To(Equal(want))
				for _, l := range lines[i] {
					if strings.HasPrefix(l, "Step 1/") {
						steps++
					}
				}
			}
			// Every caller that joined the build saw its output; a caller that arrived after it finished saw a
			// cache hit. Either way the build ran exactly once: no caller saw two "Step 1/".
			Expect(steps).To(BeNumerically(">=", 1))
			for i := range callers {
				n := 0
				for _, l := range lines[i] {
					if strings.HasPrefix(l, "Step 1/") {
						n++
					}
				}
				Expect(n).To(BeNumerically("<=", 1))
			}

			img, err := suite.Client.ImageInspect(ctx, want)
			Expect(err).NotTo(HaveOccurred())
			Expect(img.Config.Labels).To(HaveKeyWithValue(imagebuild.LabelHarness, "probe"))
			Expect(img.Config.Labels).To(HaveKeyWithValue(imagebuild.LabelManagedBy, imagebuild.ManagedBy))
			Expect(img.Config.Labels[imagebuild.LabelHash]).To(HavePrefix(want[strings.LastIndex(want, ":")+1:]))

			// The rebuilt image runs.
			run := suite.NewRun()
			out, code := runToExit(ctx, run, "rebuilt", want, "print", "rebuilt-ok")
			Expect(code).To(Equal(0))
			Expect(out).To(Equal("rebuilt-ok\n"))

			// And the next Ensure is a hit.
			var again []string
			ref, err := b.Ensure(ctx, "probe", func(l string) { again = append(again, l) })
			Expect(err).NotTo(HaveOccurred())
			Expect(ref).To(Equal(want))
			Expect(again).To(BeEmpty())
		}, SpecTimeout(3*time.Minute))

	It("never pulls: a definition whose base image is not on the engine fails before building", func(ctx SpecContext) {
		defs := fstest.MapFS{"based/Dockerfile": {Data: []byte("FROM aicli-no-such-base:1\nCOPY probe /probe\n")}}
		b := &imagebuild.Builder{Docker: suite.Client, Defs: defs, ArtifactDir: probeArtifacts, Logger: suite.Logger}
		_, err := b.Ensure(ctx, "based", nil)
		var missing *imagebuild.BaseImageMissingError
		Expect(errors.As(err, &missing)).To(BeTrue(), "got %v", err)
		Expect(missing.Image).To(Equal("aicli-no-such-base:1"))
	}, SpecTimeout(time.Minute))

	It("fails clearly when an artifact is missing", func(ctx SpecContext) {
		b := &imagebuild.Builder{Docker: suite.Client, Defs: probeBuilder.Defs, ArtifactDir: GinkgoT().TempDir()}
		_, err := b.Ensure(ctx, "probe", nil)
		Expect(err).To(MatchError(ContainSubstring("probe not found in " + b.ArtifactDir + ": run make build")))
	}, SpecTimeout(time.Minute))
})
