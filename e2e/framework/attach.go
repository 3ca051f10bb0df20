package framework

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/onsi/ginkgo/v2"
)

// Attached is a container's stdio attached (best before Start, so nothing is missed). Output arrives raw, as the
// container writes it. Prefer it to Logs for TUI output: the engine's log copier is line-based and holds a
// partial line (a TUI that only moves the cursor) until a newline or 16 KiB arrive.
type Attached struct {
	conn io.Writer
	mu   sync.Mutex
	out  bytes.Buffer
}

// Attach attaches to a non-TTY container's stdin, stdout and stderr; the attachment is closed at spec cleanup.
func (s *Suite) Attach(ctx context.Context, id string) *Attached {
	ginkgo.GinkgoHelper()
	resp, err := s.Client.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: true,
		Stdout: true, Stderr: true})
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("attach %s: %v", id, err))
	}
	ginkgo.DeferCleanup(resp.Close)
	a := &Attached{conn: resp.Conn}
	go func() { _, _ = stdcopy.StdCopy(a, a, resp.Reader) }()
	return a
}

// Write implements io.Writer (the demultiplexer's sink).
func (a *Attached) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.out.Write(p)
}

// Output returns everything received so far (stdout and stderr interleaved).
func (a *Attached) Output() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.out.String()
}

// Send types text into the container's stdin.
func (a *Attached) Send(text string) {
	ginkgo.GinkgoHelper()
	if _, err := io.WriteString(a.conn, text); err != nil {
		ginkgo.Fail(fmt.Sprintf("send to container stdin: %v", err))
	}
}
