package framework

import (
	"context"
	"errors"
	"os"
	"sync"

	"aicli.dev/aicli/images"
	"aicli.dev/aicli/internal/imagebuild"
)

// guestBins are the binaries the shipped image definitions copy, and aicli-tool, which the supervisor mounts into
// conversations from the same artifact directory.
var guestBins = map[string]string{
	"aicli-guest":    "./cmd/aicli-guest",
	"aicli-fake-cli": "./cmd/aicli-fake-cli",
	"aicli-tool":     "./cmd/aicli-tool",
}

// guestImages memoises the guest artifacts and images of one suite process.
type guestImages struct {
	mu        sync.Mutex
	dir       string
	builder   *imagebuild.Builder
	byHarness map[string]string
}

// GuestArtifacts builds the guest binaries once per suite process into a temporary directory and returns it (the
// directory is removed by Close).
func (s *Suite) GuestArtifacts(ctx context.Context) (string, error) {
	s.guest.mu.Lock()
	defer s.guest.mu.Unlock()
	return s.guestArtifactsLocked(ctx)
}

func (s *Suite) guestArtifactsLocked(ctx context.Context) (string, error) {
	if s.guest.dir != "" {
		return s.guest.dir, nil
	}
	dir, err := os.MkdirTemp("", "aicli-e2e-guest-")
	if err != nil {
		return "", err
	}
	if err := BuildBinaries(ctx, s.Root, dir, guestBins); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	s.guest.dir = dir
	return dir, nil
}

// GuestImage ensures the guest image of harness from the shipped definitions (package images) and the suite's
// guest artifacts, exactly as the supervisor does, and returns its reference. Old images are not pruned: other
// suites on the engine may be using them.
func (s *Suite) GuestImage(ctx context.Context, harness string) (string, error) {
	s.guest.mu.Lock()
	defer s.guest.mu.Unlock()
	if ref, ok := s.guest.byHarness[harness]; ok {
		return ref, nil
	}
	dir, err := s.guestArtifactsLocked(ctx)
	if err != nil {
		return "", err
	}
	if s.guest.builder == nil {
		s.guest.builder = &imagebuild.Builder{Docker: s.Client, Defs: images.FS, ArtifactDir: dir, Logger: s.Logger}
	}
	ref, err := s.guest.builder.Ensure(ctx, harness, nil)
	if err != nil {
		return "", err
	}
	if s.guest.byHarness == nil {
		s.guest.byHarness = map[string]string{}
	}
	s.guest.byHarness[harness] = ref
	return ref, nil
}

// Close releases the suite's resources: the guest artifact directory, chromium if a spec started it, and the
// engine client.
func (s *Suite) Close() error {
	s.guest.mu.Lock()
	dir := s.guest.dir
	s.guest.dir = ""
	s.guest.mu.Unlock()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	return errors.Join(s.closeChromium(), s.Client.Close())
}
