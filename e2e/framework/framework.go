package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/client"
	"github.com/onsi/ginkgo/v2"

	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/runtime/docker"
)

// Labels every test container carries.
const (
	// LabelTest marks a container as created by a test (value "1").
	LabelTest = "aicli.dev/test"
	// LabelTestRun holds the spec's run id.
	LabelTestRun = "aicli.dev/test-run"
	// LabelTestSuite holds the suite process's id, so AfterSuite can remove everything the suite leaked.
	LabelTestSuite = "aicli.dev/test-suite"
)

// StaleAfter is the age past which a test container from any run is considered orphaned.
const StaleAfter = time.Hour

// GateHint is what the gate says when the engine is unreachable.
const GateHint = "Docker daemon unreachable: run hack/ensure-docker.sh (the e2e suite requires Docker and fails, never skips, without it)"

// Suite is the state one suite process shares across specs.
type Suite struct {
	// ID is unique per suite process.
	ID string
	// Root is the module root (the directory holding go.mod).
	Root string
	// Client is the Engine API client.
	Client *client.Client
	// Runtime is the runtime under test.
	Runtime *docker.Runtime
	// ArtifactsDir receives logs, inspect dumps and screenshots of failed specs (see ArtifactsDir).
	ArtifactsDir string
	// Logger writes to GinkgoWriter.
	Logger *slog.Logger

	guest    guestImages
	chromium struct {
		mu sync.Mutex
		c  *Chromium
	}
}

// NewSuite locates the module root and builds a Docker client (it does not contact the engine: see Gate).
func NewSuite() (*Suite, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	cli, err := docker.NewClient()
	if err != nil {
		return nil, err
	}
	return &Suite{
		ID:           NewRunID("suite"),
		Root:         root,
		Client:       cli,
		Runtime:      docker.New(cli, docker.Options{}),
		ArtifactsDir: ArtifactsDir(root),
		Logger:       slog.New(slog.NewTextHandler(ginkgo.GinkgoWriter, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}, nil
}

// Gate checks that the engine answers, with a message that tells the reader what to do when it does not.
func Gate(ctx context.Context, rt runtime.Runtime) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rt.Ping(ctx); err != nil {
		return fmt.Errorf("%s: %w", GateHint, err)
	}
	return nil
}

// ModuleRoot walks up from the working directory to the directory holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("module root: no go.mod above the working directory")
		}
		dir = parent
	}
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// NewRunID returns "<name>-<8 hex>" with name reduced to a Docker-safe slug (at most 40 characters).
func NewRunID(name string) string {
	slug := strings.Trim(nonName.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(slug) > 40 {
		slug = strings.Trim(slug[:40], "-")
	}
	if slug == "" {
		slug = "spec"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return slug + "-" + hex.EncodeToString(b[:])
}

// Labels returns the labels a test container of run runID carries.
func (s *Suite) Labels(runID string) map[string]string {
	return map[string]string{LabelTest: "1", LabelTestRun: runID, LabelTestSuite: s.ID}
}

// SweepStale removes test containers of any run older than StaleAfter (the backstop for runs that died).
func (s *Suite) SweepStale(ctx context.Context) ([]string, error) {
	r := &runtime.Reaper{
		Runtime:  s.Runtime,
		Selector: map[string]string{LabelTest: "1"},
		IsKnown:  func(runtime.ContainerState) bool { return false },
		MinAge:   StaleAfter,
		Logger:   s.Logger,
	}
	return r.SweepOnce(ctx)
}

// SweepSuite removes every container this suite process created that is still there.
func (s *Suite) SweepSuite(ctx context.Context) ([]string, error) {
	r := &runtime.Reaper{
		Runtime:  s.Runtime,
		Selector: map[string]string{LabelTest: "1", LabelTestSuite: s.ID},
		IsKnown:  func(runtime.ContainerState) bool { return false },
		Logger:   s.Logger,
	}
	return r.SweepOnce(ctx)
}

// Run is one spec's slice of the suite: a run id and the containers created under it.
type Run struct {
	// ID is the run id ("<spec>-<rand>"), used as container name prefix and LabelTestRun value.
	ID string
	s  *Suite
}

// NewRun starts a run for the current spec.
func (s *Suite) NewRun() *Run {
	return &Run{ID: NewRunID(ginkgo.CurrentSpecReport().LeafNodeText), s: s}
}

// Spec returns a container spec named "<run id>-<suffix>" with the run's labels.
func (r *Run) Spec(suffix, image string, cmd ...string) runtime.ContainerSpec {
	return runtime.ContainerSpec{Name: r.ID + "-" + suffix, Image: image, Labels: r.s.Labels(r.ID), Cmd: cmd}
}

// Create creates the container and registers its cleanup: on spec failure its logs and inspect document are
// dumped first, then it is removed.
func (r *Run) Create(ctx context.Context, spec runtime.ContainerSpec) string {
	ginkgo.GinkgoHelper()
	for k, v := range r.s.Labels(r.ID) {
		if spec.Labels == nil {
			spec.Labels = map[string]string{}
		}
		spec.Labels[k] = v
	}
	id, err := r.s.Runtime.Create(ctx, spec)
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("create %s: %v", spec.Name, err))
	}
	ginkgo.DeferCleanup(func(ctx context.Context) {
		if ginkgo.CurrentSpecReport().Failed() {
			r.s.DumpContainer(ctx, r.ID, id)
		}
		if err := r.s.Runtime.Remove(ctx, id); err != nil {
			ginkgo.Fail(fmt.Sprintf("cleanup: remove %s: %v", spec.Name, err))
		}
	}, ginkgo.NodeTimeout(time.Minute))
	return id
}

// DumpContainer writes a container's logs and inspect document to ArtifactsDir/<runID>/ and GinkgoWriter.
// Failures to dump are reported, not fatal: the dump must never mask the spec's own failure.
func (s *Suite) DumpContainer(ctx context.Context, runID, id string) {
	dir := filepath.Join(s.ArtifactsDir, runID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(ginkgo.GinkgoWriter, "artifact dump: %v\n", err)
		return
	}
	short := id
	if len(short) > 12 {
		short = short[:12]
	}
	if raw, err := s.Runtime.InspectRaw(ctx, id); err == nil {
		b, _ := json.MarshalIndent(raw, "", "  ")
		_ = os.WriteFile(filepath.Join(dir, short+".inspect.json"), b, 0o644)
		st := raw.State
		if st != nil {
			fmt.Fprintf(ginkgo.GinkgoWriter, "container %s %s: status=%s exit=%d oom=%v error=%q\n",
				short, raw.Name, st.Status, st.ExitCode, st.OOMKilled, st.Error)
		}
	} else {
		fmt.Fprintf(ginkgo.GinkgoWriter, "artifact dump: inspect %s: %v\n", short, err)
	}
	logs, err := s.ContainerOutput(ctx, id)
	if err != nil {
		fmt.Fprintf(ginkgo.GinkgoWriter, "artifact dump: logs %s: %v\n", short, err)
		return
	}
	_ = os.WriteFile(filepath.Join(dir, short+".log"), []byte(logs), 0o644)
	fmt.Fprintf(ginkgo.GinkgoWriter, "---- logs of %s (also in %s) ----\n%s\n---- end of logs ----\n", short, dir, logs)
}

// ContainerOutput returns a container's combined output so far.
func (s *Suite) ContainerOutput(ctx context.Context, id string) (string, error) {
	rc, err := s.Runtime.Logs(ctx, id)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

// BuildBinaries builds static binaries into outDir the way `make build` does (CGO_ENABLED=0, -trimpath, -s -w), so
// the bytes, and therefore image tags, match the Makefile's and do not depend on the checkout path. bins maps
// output name → package path relative to root.
func BuildBinaries(ctx context.Context, root, outDir string, bins map[string]string) error {
	for name, pkg := range bins {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(outDir, name), pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
	}
	return nil
}
