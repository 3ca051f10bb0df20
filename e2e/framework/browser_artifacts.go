package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
)

// Environment variables of the artifact helpers (e2e/README.md).
const (
	// EnvArtifacts overrides where failed specs leave their artifacts (default e2e/_artifacts under the module root).
	EnvArtifacts = "AICLI_TEST_ARTIFACTS"
	// EnvUpdateScreenshots set to "1" makes SaveScreenshot (re)write the README screenshots.
	EnvUpdateScreenshots = "AICLI_UPDATE_SCREENSHOTS"
)

// ArtifactsDir is where failed specs leave logs and screenshots: $AICLI_TEST_ARTIFACTS, else e2e/_artifacts under
// the module root (git-ignored).
func ArtifactsDir(root string) string {
	if dir := os.Getenv(EnvArtifacts); dir != "" {
		return dir
	}
	return filepath.Join(root, "e2e", "_artifacts")
}

// ScreenshotOnFailure registers a cleanup that, when the current spec has failed, saves a full-page PNG of b's
// page and its console log into ArtifactsDir and prints their paths to GinkgoWriter. Register it after the
// cleanup that closes b (cleanups run last-in first-out), e.g. right after creating b.
func ScreenshotOnFailure(b *Browser, name string) {
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		if !ginkgo.CurrentSpecReport().Failed() {
			return
		}
		root, err := ModuleRoot()
		if err != nil {
			fmt.Fprintf(ginkgo.GinkgoWriter, "screenshot on failure: %v\n", err)
			return
		}
		dir := filepath.Join(ArtifactsDir(root), NewRunID(ginkgo.CurrentSpecReport().LeafNodeText))
		png, err := WriteFailureArtifacts(ctx, b, dir, name)
		if err != nil {
			// Reported, not fatal: the artifact must never mask the spec's own failure.
			fmt.Fprintf(ginkgo.GinkgoWriter, "screenshot on failure: %v\n", err)
			return
		}
		fmt.Fprintf(ginkgo.GinkgoWriter, "screenshot of the failed page: %s (console log next to it)\n", png)
	}, ginkgo.NodeTimeout(30*time.Second))
}

// WriteFailureArtifacts writes dir/<name>.png (the whole page) and dir/<name>.console.txt (the tab's console
// messages, with the page address first) and returns the PNG's path. ScreenshotOnFailure calls it.
func WriteFailureArtifacts(ctx context.Context, b *Browser, dir, name string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("artifacts: %w", err)
	}
	url, err := b.URL(ctx)
	if err != nil {
		url = "(unknown: " + err.Error() + ")"
	}
	log := "page: " + url + "\n" + strings.Join(b.Console(), "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, name+".console.txt"), []byte(log), 0o644); err != nil {
		return "", fmt.Errorf("artifacts: %w", err)
	}
	path := filepath.Join(dir, name+".png")
	if err := WriteScreenshot(ctx, b, path); err != nil {
		return "", err
	}
	return path, nil
}

// WriteScreenshot writes a full-page PNG of b's page to path, creating its directory.
func WriteScreenshot(ctx context.Context, b *Browser, path string) error {
	png, err := b.Screenshot(ctx)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	return nil
}

// SaveScreenshot (re)generates a documentation screenshot, such as a README image under docs/images/, when
// AICLI_UPDATE_SCREENSHOTS=1; otherwise it does nothing. A relative path is relative to the module root. It
// returns whether it wrote the file.
func SaveScreenshot(ctx context.Context, b *Browser, path string) (bool, error) {
	if os.Getenv(EnvUpdateScreenshots) != "1" {
		return false, nil
	}
	if !filepath.IsAbs(path) {
		root, err := ModuleRoot()
		if err != nil {
			return false, err
		}
		path = filepath.Join(root, path)
	}
	if err := WriteScreenshot(ctx, b, path); err != nil {
		return false, err
	}
	fmt.Fprintf(ginkgo.GinkgoWriter, "updated %s\n", path)
	return true, nil
}

// Chromium returns the suite's chromium process, launching it on first use (specs that need no browser never
// start one). Close stops it.
func (s *Suite) Chromium(ctx context.Context) (*Chromium, error) {
	s.chromium.mu.Lock()
	defer s.chromium.mu.Unlock()
	if s.chromium.c == nil {
		c, err := StartChromium(ctx)
		if err != nil {
			return nil, err
		}
		s.chromium.c = c
	}
	return s.chromium.c, nil
}

// NewBrowser opens a tab of the suite's chromium for the current spec, failing the spec when it cannot. The tab
// is closed at spec cleanup, after a screenshot and console log are saved if the spec failed.
func (s *Suite) NewBrowser(ctx context.Context) *Browser {
	ginkgo.GinkgoHelper()
	c, err := s.Chromium(ctx)
	if err != nil {
		ginkgo.Fail(err.Error())
	}
	b, err := c.NewBrowser(ctx)
	if err != nil {
		ginkgo.Fail(err.Error())
	}
	ginkgo.DeferCleanup(b.Close)
	ScreenshotOnFailure(b, "page")
	return b
}

func (s *Suite) closeChromium() error {
	s.chromium.mu.Lock()
	defer s.chromium.mu.Unlock()
	if s.chromium.c == nil {
		return nil
	}
	err := s.chromium.c.Close()
	s.chromium.c = nil
	return err
}
