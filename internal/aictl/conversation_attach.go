package aictl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/coder/websocket"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/convapi/wire"
)

// detachKey is Ctrl-], telnet's escape: typing it ends the attach and leaves
// the conversation running.
const detachKey = 0x1d

func newAttachCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "attach CONVERSATION",
		Short: "Attach this terminal to a live conversation's PTY (detach with Ctrl-])",
		Long: "Attach connects the terminal, in raw mode, to the conversation's CLI over a websocket: what you " +
			"type goes to the CLI and its output comes back unchanged. Ctrl-] detaches and leaves the " +
			"conversation running. The terminal is restored on exit and window size changes are forwarded.",
		Example: "  aictl attach coder-x7k2p",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, name, err := conversationTarget(g, args[0])
			if err != nil {
				return err
			}
			return runAttach(cmd.Context(), g, cl, name)
		},
	}
}

func runAttach(ctx context.Context, g *globalOptions, cl *client.Client, name string) error {
	c, err := cl.DialAttach(ctx, g.ns(), name)
	if err != nil {
		return &opError{op: "attach to " + name, err: err}
	}
	defer c.CloseNow()

	in, out := g.streams.In, g.streams.Out
	restore := func() {}
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		state, err := term.MakeRaw(int(f.Fd()))
		if err != nil {
			return fmt.Errorf("attach: raw terminal: %w", err)
		}
		restore = func() { _ = term.Restore(int(f.Fd()), state) }
	}
	defer restore()
	fmt.Fprintf(g.streams.ErrOut, "Attached to conversation %s. Detach with Ctrl-] (the conversation keeps running).\r\n", name)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go forwardResizes(ctx, c, out)

	detached := make(chan error, 1)
	go func() { detached <- forwardInput(ctx, c, in) }()
	outErr := make(chan error, 1)
	go func() { outErr <- copyOutput(ctx, c, out) }()

	select {
	case err := <-detached:
		restore()
		if err != nil {
			return fmt.Errorf("attach: %w", err)
		}
		// Close before cancelling: a cancelled read would drop the
		// connection instead of finishing the close handshake.
		_ = c.Close(websocket.StatusNormalClosure, "detached")
		fmt.Fprintf(g.streams.ErrOut, "\r\nDetached from conversation %s; it keeps running.\n", name)
		return nil
	case err := <-outErr:
		restore()
		var ce websocket.CloseError
		switch {
		case errors.As(err, &ce) && ce.Code == websocket.StatusNormalClosure:
			fmt.Fprintf(g.streams.ErrOut, "\r\nConnection to conversation %s closed: %s\n", name, ce.Reason)
			return nil
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &ce):
			return fmt.Errorf("attach: the server closed the connection: %s", ce.Reason)
		default:
			return fmt.Errorf("attach: %w", err)
		}
	}
}

// forwardInput sends keystrokes as binary frames until the detach key or the
// end of input (both a clean detach, nil) or a write failure.
func forwardInput(ctx context.Context, c *websocket.Conn, in io.Reader) error {
	buf := make([]byte, 4096)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			chunk, detach := buf[:n], false
			if i := bytes.IndexByte(chunk, detachKey); i >= 0 {
				chunk, detach = chunk[:i], true
			}
			if len(chunk) > 0 {
				if werr := c.Write(ctx, websocket.MessageBinary, chunk); werr != nil {
					if ctx.Err() != nil {
						return nil
					}
					return fmt.Errorf("sending keystrokes: %w", werr)
				}
			}
			if detach {
				return nil
			}
		}
		if err != nil {
			return nil // end of input detaches
		}
	}
}

// copyOutput writes the PTY's bytes to out until the connection ends; it
// returns the error that ended it (a CloseError for a server close).
func copyOutput(ctx context.Context, c *websocket.Conn, out io.Writer) error {
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return err
		}
		if typ != websocket.MessageBinary {
			continue
		}
		if _, err := out.Write(data); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
	}
}

// forwardResizes sends the terminal's size now and on every SIGWINCH, when
// out is a terminal.
func forwardResizes(ctx context.Context, c *websocket.Conn, out io.Writer) {
	f, ok := out.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	for {
		if cols, rows, err := term.GetSize(int(f.Fd())); err == nil {
			if err := sendResize(ctx, c, cols, rows); err != nil {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-winch:
		}
	}
}

func sendResize(ctx context.Context, c *websocket.Conn, cols, rows int) error {
	msg, err := json.Marshal(wire.ControlMessage{Type: wire.ControlTypeResize, Cols: cols, Rows: rows})
	if err != nil {
		return err
	}
	return c.Write(ctx, websocket.MessageText, msg)
}
