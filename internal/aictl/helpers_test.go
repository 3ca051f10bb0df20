package aictl

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/client/clienttest"
)

// syncBuffer is a bytes.Buffer safe to read while a command writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type result struct {
	out, err string
	code     int
}

// aictl runs the command line against server with stdin in.
func aictlIn(t *testing.T, ctx context.Context, server, in string, args ...string) result {
	t.Helper()
	var out, errOut syncBuffer
	full := append([]string{"--server", server}, args...)
	code := Run(ctx, full, IOStreams{In: strings.NewReader(in), Out: &out, ErrOut: &errOut})
	return result{out: out.String(), err: errOut.String(), code: code}
}

func aictl(t *testing.T, server string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return aictlIn(t, ctx, server, "", args...)
}

// started runs aictl in the background; stop cancels it and wait waits for it.
func started(t *testing.T, server string, args ...string) (out *syncBuffer, stop func(), wait func() result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	out = &syncBuffer{}
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, append([]string{"--server", server}, args...), IOStreams{In: strings.NewReader(""), Out: out, ErrOut: &errOut})
	}()
	t.Cleanup(cancel)
	return out, cancel, func() result {
		select {
		case code := <-done:
			return result{out: out.String(), err: errOut.String(), code: code}
		case <-time.After(15 * time.Second):
			t.Fatalf("aictl %v did not finish; out=%q err=%q", args, out.String(), errOut.String())
			return result{}
		}
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
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
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// setReady sets the Ready condition as a controller would.
func setReady(t *testing.T, srv *clienttest.Server, plural, ns, name, status string, condGen, statusGen int64) {
	t.Helper()
	err := srv.Mutate(plural, ns, name, func(o *unstructured.Unstructured) {
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
	if err != nil {
		t.Fatal(err)
	}
}

const agentYAML = `apiVersion: aicli.dev/v1alpha1
kind: Agent
metadata:
  name: %s
spec:
  harness: fake
  model: %s
`
