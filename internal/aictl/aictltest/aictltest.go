package aictltest

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Timeout bounds every command run through this package.
const Timeout = 30 * time.Second

// Buffer is a bytes.Buffer that may be read while a command writes to it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Runner runs one aictl command line and returns its exit code (aictl.Run
// with its streams spelled out).
type Runner func(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int

// Result is a finished command's output and exit code.
type Result struct {
	Out, Err string
	Code     int
}

// Run runs args with stdin to completion, bounded by ctx and Timeout.
func Run(ctx context.Context, run Runner, stdin string, args []string) Result {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	var out, errOut Buffer
	code := run(ctx, args, strings.NewReader(stdin), &out, &errOut)
	return Result{Out: out.String(), Err: errOut.String(), Code: code}
}

// Start runs args in the background. stop cancels the command; wait returns
// its result, failing the test if it does not finish within Timeout.
func Start(tb testing.TB, run Runner, args []string) (out *Buffer, stop func(), wait func() Result) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	tb.Cleanup(cancel)
	out = &Buffer{}
	errOut := &Buffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, strings.NewReader(""), out, errOut) }()
	return out, cancel, func() Result {
		tb.Helper()
		select {
		case code := <-done:
			return Result{Out: out.String(), Err: errOut.String(), Code: code}
		case <-time.After(Timeout):
			tb.Fatalf("aictl %v did not finish; out=%q err=%q", args, out.String(), errOut.String())
			return Result{}
		}
	}
}

// WriteFile writes content to dir/name and returns the path.
func WriteFile(tb testing.TB, dir, name, content string) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// Eventually polls cond every 10ms until it holds, failing the test after 20s.
func Eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
