package aictl

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/aictl/aictltest"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
)

// syncBuffer is a buffer safe to read while a command writes to it.
type syncBuffer = aictltest.Buffer

type result struct {
	out, err string
	code     int
}

func runner(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int {
	return Run(ctx, args, IOStreams{In: in, Out: out, ErrOut: errOut})
}

func fromResult(r aictltest.Result) result { return result{out: r.Out, err: r.Err, code: r.Code} }

// aictlIn runs the command line against server with stdin in.
func aictlIn(t *testing.T, ctx context.Context, server, in string, args ...string) result {
	t.Helper()
	return fromResult(aictltest.Run(ctx, runner, in, append([]string{"--server", server}, args...)))
}

func aictl(t *testing.T, server string, args ...string) result {
	t.Helper()
	return aictlIn(t, context.Background(), server, "", args...)
}

// started runs aictl in the background; stop cancels it and wait waits for it.
func started(t *testing.T, server string, args ...string) (out *syncBuffer, stop func(), wait func() result) {
	t.Helper()
	out, stop, w := aictltest.Start(t, runner, append([]string{"--server", server}, args...))
	return out, stop, func() result { return fromResult(w()) }
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	return aictltest.WriteFile(t, dir, name, content)
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

// testServer is the real API server (over a store in a temporary directory)
// and the address aictl reaches it at.
type testServer struct {
	*apiservertest.Server
	URL string
}

// unixServer serves the API on a unix socket, as the supervisor's local admin.
func unixServer(t *testing.T) testServer {
	t.Helper()
	srv := apiservertest.New(t)
	return testServer{Server: srv, URL: srv.ServeUnix(t)}
}

// setReady sets the Ready condition as a controller would.
func setReady(t *testing.T, srv testServer, plural, ns, name, status string, condGen, statusGen int64) {
	t.Helper()
	srv.Mutate(t, plural, ns, name, func(o *unstructured.Unstructured) {
		cond := map[string]any{"type": "Ready", "status": status, "reason": "Succeeded", "message": "all good",
			"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}
		if condGen != 0 {
			cond["observedGeneration"] = condGen
		}
		_ = unstructured.SetNestedSlice(o.Object, []any{cond}, "status", "conditions")
		if statusGen != 0 {
			_ = unstructured.SetNestedField(o.Object, statusGen, "status", "observedGeneration")
		}
	})
}

const agentYAML = `apiVersion: aicli.dev/v1alpha1
kind: Agent
metadata:
  name: %s
spec:
  harness: fake
  model: %s
`

// fakeEndpoint serves h on a unix socket (a stand-in for one supervisor
// endpoint) and returns the --server address aictl reaches it at.
func fakeEndpoint(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "unix://" + sock
}
