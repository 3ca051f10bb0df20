package integration

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/aictl"
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

// run runs the aictl command line against server.
func run(t *testing.T, server string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut syncBuffer
	code := aictl.Run(ctx, append([]string{"--server", server}, args...), aictl.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return result{out: out.String(), err: errOut.String(), code: code}
}

// started runs aictl in the background; stop cancels it and wait waits for it.
func started(t *testing.T, server string, args ...string) (out *syncBuffer, stop func(), wait func() result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	out = &syncBuffer{}
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- aictl.Run(ctx, append([]string{"--server", server}, args...), aictl.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: &errOut})
	}()
	t.Cleanup(cancel)
	return out, cancel, func() result {
		select {
		case code := <-done:
			return result{out: out.String(), err: errOut.String(), code: code}
		case <-time.After(30 * time.Second):
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
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readyForGeneration reports whether obj's Ready condition is True for its
// current generation.
func readyForGeneration(obj *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	og, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			if g, ok := m["observedGeneration"].(int64); ok && g != 0 {
				og = g
			}
			return m["status"] == "True" && og == obj.GetGeneration()
		}
	}
	return false
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
