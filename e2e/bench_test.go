//go:build e2e

package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"aicli.dev/aicli/e2e/framework"
	"aicli.dev/aicli/internal/imagebuild"
	"aicli.dev/aicli/internal/runtime"
)

// Benchmarks: go test -tags e2e -run '^$' -bench . -benchtime 20x ./e2e/ (hack/bench/runtime-bench.sh).
// Each reports p50/p90 in milliseconds besides the mean ns/op.

type benchImage struct {
	ref string
	cmd []string // what makes the container print something
}

var (
	benchOnce  sync.Once
	benchSuite *framework.Suite
	benchErr   error
	benchImgs  map[string]benchImage
)

func benchSetup(b *testing.B) (*framework.Suite, map[string]benchImage) {
	b.Helper()
	benchOnce.Do(func() {
		ctx := context.Background()
		benchSuite, benchErr = framework.NewSuite()
		if benchErr != nil {
			return
		}
		if benchErr = framework.Gate(ctx, benchSuite.Runtime); benchErr != nil {
			return
		}
		dir, err := os.MkdirTemp("", "aicli-bench-")
		if err != nil {
			benchErr = err
			return
		}
		defer os.RemoveAll(dir) // only needed until the probe image is built
		benchErr = framework.BuildBinaries(ctx, benchSuite.Root, dir, map[string]string{"probe": "./e2e/testdata/probe"})
		if benchErr != nil {
			return
		}
		benchImgs = map[string]benchImage{}
		probe := &imagebuild.Builder{Docker: benchSuite.Client, ArtifactDir: dir, Logger: benchSuite.Logger,
			Defs: os.DirFS(filepath.Join(benchSuite.Root, "e2e", "testdata", "images"))}
		ref, err := probe.Ensure(ctx, "probe", nil)
		if err != nil {
			benchErr = err
			return
		}
		benchImgs["probe"] = benchImage{ref: ref, cmd: []string{"print", "hello"}}
		if ref, benchErr = benchSuite.GuestImage(ctx, "fake"); benchErr != nil {
			return
		}
		benchImgs["fake"] = benchImage{ref: ref} // transparent mode: the fake CLI's first screen
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchSuite, benchImgs
}

// TestMain releases what the benchmarks set up (the Ginkgo suite cleans up after itself).
func TestMain(m *testing.M) {
	code := m.Run()
	if benchSuite != nil {
		_ = benchSuite.Close()
	}
	os.Exit(code)
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	p := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(p(0.5), "p50-ms")
	b.ReportMetric(p(0.9), "p90-ms")
}

// BenchmarkDockerRunFirstOutput is the baseline: `docker run` of the image until its first stdout byte.
func BenchmarkDockerRunFirstOutput(b *testing.B) {
	s, imgs := benchSetup(b)
	for _, name := range []string{"probe", "fake"} {
		img := imgs[name]
		b.Run(name, func(b *testing.B) {
			runID := framework.NewRunID("bench-docker-run")
			b.Cleanup(func() { sweepRun(s, runID) })
			var ds []time.Duration
			for i := 0; b.Loop(); i++ {
				args := []string{"run", "--rm", "-i", "--network", "none", "--name", fmt.Sprintf("%s-%d", runID, i)}
				for k, v := range s.Labels(runID) {
					args = append(args, "--label", k+"="+v)
				}
				args = append(append(args, img.ref), img.cmd...)
				cmd := exec.Command("docker", args...)
				stdin, _ := cmd.StdinPipe()
				out, err := cmd.StdoutPipe()
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				if _, err := bufio.NewReader(out).ReadByte(); err != nil {
					b.Fatalf("no output: %v", err)
				}
				ds = append(ds, time.Since(start))
				_ = stdin.Close()
				_ = exec.Command("docker", "rm", "-f", fmt.Sprintf("%s-%d", runID, i)).Run()
				_ = cmd.Wait()
			}
			reportPercentiles(b, ds)
		})
	}
}

// BenchmarkRuntimeFirstOutput is the supervisor's path: runtime Create → attach → Start until the first byte.
func BenchmarkRuntimeFirstOutput(b *testing.B) {
	s, imgs := benchSetup(b)
	ctx := context.Background()
	for _, name := range []string{"probe", "fake"} {
		img := imgs[name]
		b.Run(name, func(b *testing.B) {
			runID := framework.NewRunID("bench-runtime")
			b.Cleanup(func() { sweepRun(s, runID) })
			var first, started []time.Duration
			for i := 0; b.Loop(); i++ {
				spec := runtime.ContainerSpec{Name: fmt.Sprintf("%s-%d", runID, i), Image: img.ref, Cmd: img.cmd,
					Labels: s.Labels(runID), OpenStdin: true}
				start := time.Now()
				id, err := s.Runtime.Create(ctx, spec)
				if err != nil {
					b.Fatal(err)
				}
				att, err := s.Client.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Runtime.Start(ctx, id); err != nil {
					b.Fatal(err)
				}
				started = append(started, time.Since(start))
				// The first byte of the multiplexed stream is a frame header sent together with the first output.
				if _, err := att.Reader.ReadByte(); err != nil {
					b.Fatalf("no output: %v", err)
				}
				first = append(first, time.Since(start))
				att.Close()
				if err := s.Runtime.Remove(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
			reportPercentiles(b, first)
			slices.Sort(started)
			b.ReportMetric(float64(started[len(started)/2].Microseconds())/1000, "create+start-p50-ms")
		})
	}
}

func sweepRun(s *framework.Suite, runID string) {
	r := &runtime.Reaper{Runtime: s.Runtime, Selector: map[string]string{framework.LabelTestRun: runID},
		IsKnown: func(runtime.ContainerState) bool { return false }, Logger: s.Logger}
	_, _ = r.SweepOnce(context.Background())
}
