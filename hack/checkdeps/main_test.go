package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain lets the test binary act as the checker, so the tests see its real
// exit status.
func TestMain(m *testing.M) {
	if os.Getenv("CHECKDEPS_AS_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// checker runs the checker as a process with args.
func checker(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "CHECKDEPS_AS_MAIN=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running the checker: %v", err)
	}
	return code, out.String(), errOut.String()
}

func TestBadModuleFailsNamingEachImportChain(t *testing.T) {
	code, stdout, stderr := checker(t, "-C", "testdata/bad")
	if code != 1 {
		t.Fatalf("exit code %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	const cmd, in = "example.com/bad/cmd/aictl", "example.com/bad/internal/"
	for _, want := range []string{
		"./cmd/aictl links " + in + "apiserver (the supervisor's API server): " +
			cmd + " → " + in + "client → " + in + "apiserver\n",
		"./cmd/aictl links " + in + "store (the supervisor's event store): " +
			cmd + " → " + in + "client → " + in + "transcript → " + in + "store\n",
		"./cmd/aictl links github.com/cockroachdb/pebble/v2 (the store's storage engine): " +
			cmd + " → " + in + "cache → github.com/cockroachdb/pebble/v2\n",
		"./cmd/aictl links github.com/prometheus/client_golang/prometheus (the supervisor's metrics): " +
			cmd + " → " + in + "metrics → github.com/prometheus/client_golang/prometheus\n",
		"./internal/client links " + in + "apiserver (the supervisor's API server): " +
			in + "client → " + in + "apiserver\n",
		"./cmd/aicli-console links " + in + "apiserver (the supervisor's API server): " +
			"example.com/bad/cmd/aicli-console → " + in + "client → " + in + "apiserver\n",
		"apis/v1/types.go:8: example.com/bad/apis/v1 imports sigs.k8s.io/controller-runtime/pkg/scheme: " +
			"apis/ may import only the standard library and k8s.io/apimachinery\n",
	} {
		if !strings.Contains(stderr, "checkdeps: "+want) {
			t.Errorf("stderr lacks %q\nstderr:\n%s", want, stderr)
		}
	}
	// Nine violations (five through cmd/aictl, two through internal/client,
	// which the consoles build on, and those two again through
	// cmd/aicli-console): pebble under the store is the store's problem, and
	// apimachinery and the standard library are allowed in apis/.
	if n := strings.Count(stderr, "checkdeps: "); n != 9 {
		t.Errorf("%d violations reported, want 9:\n%s", n, stderr)
	}
}

func TestRepositoryHoldsItsBoundaries(t *testing.T) {
	code, stdout, stderr := checker(t, "-C", "../..")
	if code != 0 || !strings.Contains(stdout, "import boundaries hold") {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

func TestUnableToCheckIsExitTwo(t *testing.T) {
	for name, args := range map[string][]string{
		"not a module":    {"-C", t.TempDir()},
		"stray argument":  {"./cmd/aictl"},
		"unknown flag":    {"-strict"},
		"missing -C path": {"-C", "testdata/none"},
	} {
		t.Run(name, func(t *testing.T) {
			if code, _, stderr := checker(t, args...); code != 2 || stderr == "" {
				t.Fatalf("exit code %d (want 2), stderr %q", code, stderr)
			}
		})
	}
}
