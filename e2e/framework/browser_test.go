package framework

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestArtifactsDir(t *testing.T) {
	t.Setenv(EnvArtifacts, "")
	if got, want := ArtifactsDir("/src"), filepath.Join("/src", "e2e", "_artifacts"); got != want {
		t.Errorf("default: %q, want %q", got, want)
	}
	t.Setenv(EnvArtifacts, "/tmp/arts")
	if got := ArtifactsDir("/src"); got != "/tmp/arts" {
		t.Errorf("with $%s: %q", EnvArtifacts, got)
	}
}

// A missing or broken chromium fails fast and says what to run.
func TestStartChromiumFailsLoudly(t *testing.T) {
	for _, path := range []string{"/nonexistent/chromium", "/bin/false"} {
		start := time.Now()
		c, err := startChromium(context.Background(), path)
		if err == nil {
			_ = c.Close()
			t.Fatalf("%s: started", path)
		}
		if !strings.Contains(err.Error(), "hack/ensure-chromium.sh") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error lacks the path or the hint: %v", path, err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: took %s to fail", path, d)
		}
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 4}
	_, _ = b.Write([]byte("abc"))
	_, _ = b.Write([]byte("def"))
	if got := b.String(); got != "cdef" {
		t.Errorf("tail %q", got)
	}
}
