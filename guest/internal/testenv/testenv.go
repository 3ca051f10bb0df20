package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// UID is the unprivileged user (and group) tests run the CLI as.
const UID = 1000

// Build compiles the fake CLI into a new world-traversable temp directory and
// returns that directory and the binary path. Remove the directory when done.
func Build() (dir, bin string, err error) {
	if os.Geteuid() != 0 {
		return "", "", fmt.Errorf("guest tests run the CLI as uid %d and need root", UID)
	}
	dir, err = os.MkdirTemp("", "guest-test-")
	if err != nil {
		return "", "", fmt.Errorf("temp dir: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return "", "", fmt.Errorf("chmod temp dir: %w", err)
	}
	bin = filepath.Join(dir, "aicli-fake-cli")
	build := exec.Command("go", "build", "-o", bin, "aicli.dev/aicli/cmd/aicli-fake-cli")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", "", fmt.Errorf("build fake cli: %w\n%s", err, out)
	}
	return dir, bin, nil
}

// Dirs is one test's CLI home (not yet created) and working directory.
type Dirs struct {
	Home, Work string
}

// NewDirs makes a fresh directory under base holding a work directory owned
// by UID; Home is a path inside it for the guest to create.
func NewDirs(t testing.TB, base string) Dirs {
	t.Helper()
	dir, err := os.MkdirTemp(base, "t-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := Dirs{Home: filepath.Join(dir, "home"), Work: filepath.Join(dir, "work")}
	if err := os.Mkdir(d.Work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d.Work, UID, UID); err != nil {
		t.Fatal(err)
	}
	return d
}
