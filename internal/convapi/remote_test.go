package convapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/convapi/convapitest"
	"aicli.dev/aicli/internal/convapi/wire"
)

// The same operations through the real remote proxy (ptyclient → guest
// HTTP server): contract errors survive the wire and the output stream is
// relayed as it is produced.
func TestThroughTheRemoteProxy(t *testing.T) {
	env, pty := liveC1(t, true)

	code, body := env.Do(t, http.MethodPost, sendPath("default", "c1"), "text/plain", []byte("over the wire"))
	if code != http.StatusAccepted {
		t.Fatalf("send: HTTP %d: %s", code, body)
	}
	if msgs := pty.Messages(); len(msgs) != 1 || msgs[0] != "over the wire" {
		t.Errorf("guest got %q", msgs)
	}
	pty.FailSends(ptyapi.Errorf(ptyapi.ErrExited, "exit status 3"))
	code, body = env.Do(t, http.MethodPost, sendPath("default", "c1"), "text/plain", []byte("too late"))
	wantStatus(t, code, body, http.StatusConflict, "CLI has exited")
	pty.FailSends(nil)

	code, body = env.Do(t, http.MethodGet, convapitest.Path("conversations", "default", "c1", wire.SubScreen)+"?format=text", "", nil)
	if code != http.StatusOK || !strings.Contains(string(body), "? for shortcuts") {
		t.Errorf("screen: HTTP %d %q", code, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialC1(ctx, t, env, pty)
	pty.Output([]byte("streamed\r\n"))
	readUntil(ctx, t, c, "streamed\r\n")
	if err := c.Write(ctx, websocket.MessageBinary, []byte("y")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the keystroke crossed the wire", func() bool { return pty.Keystrokes() == "y" })
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the guest stream is released", func() bool { return pty.Subscribers() == 0 })
}
