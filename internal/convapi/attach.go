package convapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/convapi/wire"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// attachReadLimit bounds one client frame (a paste arrives as one frame).
const attachReadLimit = 1 << 20

// attachChunk is the read size of the PTY output pump.
const attachChunk = 32 << 10

// attach is GET …/conversations/{name}/attach: a websocket carrying raw PTY
// output (binary, server → client), keystrokes (binary, client → server) and
// resize control messages (text, client → server). The first binary frame
// repaints the current screen so the client does not start blank.
func (a *API) attach(w http.ResponseWriter, r *http.Request) {
	t, ok := a.resolve(w, r, http.MethodGet, conversationsPlural)
	if !ok {
		return
	}
	pty, err := a.livePTY(t)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// Subscribe before upgrading so that a failure is still a Status reply.
	out, err := pty.Subscribe(ctx)
	if err != nil {
		apiserver.WriteError(w, a.guestError(t, "subscribe", err))
		return
	}
	defer out.Close()
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		a.log.Warn("attach: websocket upgrade failed", "namespace", t.ns, "conversation", t.name, "error", err.Error())
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(attachReadLimit)
	a.log.Info("attached", "namespace", t.ns, "conversation", t.name)

	if scr, err := pty.RenderScreen(ctx); err == nil {
		if err := c.Write(ctx, websocket.MessageBinary, repaint(scr)); err != nil {
			return
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		reason := pumpOutput(ctx, c, out)
		_ = c.Close(websocket.StatusNormalClosure, reason)
	}()
	if err := a.pumpInput(ctx, c, pty, string(t.obj.GetUID())); err != nil {
		_ = c.Close(websocket.StatusInternalError, truncateReason(err.Error()))
	}
	cancel()
	_ = out.Close()
	wg.Wait()
	a.log.Info("detached", "namespace", t.ns, "conversation", t.name)
}

// pumpOutput copies PTY output into binary frames until either side ends,
// and returns the close reason for the client.
func pumpOutput(ctx context.Context, c *websocket.Conn, out io.Reader) string {
	buf := make([]byte, attachChunk)
	for {
		n, err := out.Read(buf)
		if n > 0 {
			if werr := c.Write(ctx, websocket.MessageBinary, buf[:n]); werr != nil {
				return "client gone"
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return "detached"
			}
			return "the conversation's output ended"
		}
	}
}

// pumpInput forwards keystrokes and resizes until the client closes or ctx
// ends; a nil error is a clean end. Each line the keystrokes submit is
// announced to the attribution as the human's before the keystrokes reach
// the CLI (typedLine), so the user turn it produces is attributed to human.
func (a *API) pumpInput(ctx context.Context, c *websocket.Conn, pty ptyapi.PTY, uid string) error {
	var typed typedLine
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return nil // client closed, or output ended and cancelled ctx
		}
		switch typ {
		case websocket.MessageBinary:
			if len(data) == 0 {
				continue
			}
			for _, line := range typed.feed(data) {
				if a.opts.Attribution != nil {
					a.opts.Attribution.Expect(uid, transcriptwire.SpeakerHuman, line)
				}
			}
			if err := pty.SendString(ctx, string(data)); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("keystrokes: %w", err)
			}
		case websocket.MessageText:
			var msg wire.ControlMessage
			if err := json.Unmarshal(data, &msg); err != nil {
				return fmt.Errorf("control message: %w", err)
			}
			if msg.Type != wire.ControlTypeResize {
				return fmt.Errorf("control message: unknown type %q", msg.Type)
			}
			if err := pty.Resize(ctx, msg.Cols, msg.Rows); err != nil {
				if errors.Is(err, ptyapi.ErrInvalidArgument) {
					continue // a bad size from a client terminal is not worth the session
				}
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("resize: %w", err)
			}
		}
	}
}

// repaint renders a screen as terminal output: clear, the lines, then the cursor.
func repaint(scr ptyapi.Screen) []byte {
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J")
	for i, line := range scr.Lines {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(strings.TrimRight(line, " "))
	}
	fmt.Fprintf(&b, "\x1b[%d;%dH", scr.CursorY+1, scr.CursorX+1)
	return []byte(b.String())
}

// truncateReason keeps a close reason within the 123 bytes a close frame allows.
func truncateReason(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
