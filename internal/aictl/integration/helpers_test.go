package integration

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"

	"aicli.dev/aicli/internal/aictl"
	"aicli.dev/aicli/internal/aictl/aictltest"
)

type result struct {
	out, err string
	code     int
}

func runner(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int {
	return aictl.Run(ctx, args, aictl.IOStreams{In: in, Out: out, ErrOut: errOut})
}

func fromResult(r aictltest.Result) result { return result{out: r.Out, err: r.Err, code: r.Code} }

// run runs the aictl command line against server.
func run(t *testing.T, server string, args ...string) result {
	t.Helper()
	return fromResult(aictltest.Run(context.Background(), runner, "", append([]string{"--server", server}, args...)))
}

// started runs aictl in the background; stop cancels it and wait waits for it.
func started(t *testing.T, server string, args ...string) (out *aictltest.Buffer, stop func(), wait func() result) {
	t.Helper()
	out, stop, w := aictltest.Start(t, runner, append([]string{"--server", server}, args...))
	return out, stop, func() result { return fromResult(w()) }
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	return aictltest.WriteFile(t, dir, name, content)
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.out, r.err)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	aictltest.Eventually(t, what, cond)
}

type countingWriter struct{ lines int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.lines += bytes.Count(p, []byte("\n"))
	return len(p), nil
}

const agentYAML = `apiVersion: aicli.dev/v1alpha1
kind: Agent
metadata:
  name: %s
spec:
  harness: fake
  model: %s
`
