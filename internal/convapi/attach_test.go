package convapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/convapi/convapitest"
	"aicli.dev/aicli/internal/convapi/wire"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

func attachURL(env *convapitest.Env, ns, name string) string {
	return "ws" + strings.TrimPrefix(env.URL, "http") + convapitest.Path("conversations", ns, name, wire.SubAttach)
}

// readUntil reads binary frames until their concatenation contains want.
func readUntil(ctx context.Context, t *testing.T, c *websocket.Conn, want string) string {
	t.Helper()
	var got bytes.Buffer
	for !strings.Contains(got.String(), want) {
		typ, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("reading until %q (got %q): %v", want, got.String(), err)
		}
		if typ != websocket.MessageBinary {
			t.Fatalf("server sent a %v frame, want binary", typ)
		}
		got.Write(data)
	}
	return got.String()
}

func TestAttachRoundTrip(t *testing.T) {
	env, pty := liveC1(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	c, _, err := websocket.Dial(ctx, attachURL(env, "default", "c1"), nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.CloseNow()

	// The first frame repaints the current screen.
	first := readUntil(ctx, t, c, "? for shortcuts")
	if !strings.HasPrefix(first, "\x1b[H\x1b[2J") {
		t.Errorf("repaint %q does not start by clearing the screen", first)
	}
	eventually(t, "the attach subscribed to the PTY", func() bool { return pty.Subscribers() == 1 })

	// Server → client: raw bytes, including escape sequences, unchanged.
	pty.Output([]byte("\x1b[32mfake[turn 1]: hi\x1b[0m\r\n"))
	readUntil(ctx, t, c, "\x1b[32mfake[turn 1]: hi\x1b[0m\r\n")

	// Client → server: keystrokes and a resize.
	if err := c.Write(ctx, websocket.MessageBinary, []byte("ls\r")); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, websocket.MessageBinary, []byte{0x03}); err != nil {
		t.Fatal(err)
	}
	resize, _ := json.Marshal(wire.ControlMessage{Type: wire.ControlTypeResize, Cols: 100, Rows: 30})
	if err := c.Write(ctx, websocket.MessageText, resize); err != nil {
		t.Fatal(err)
	}
	eventually(t, "keystrokes and resize reached the PTY", func() bool {
		return pty.Keystrokes() == "ls\r\x03" && len(pty.Resizes()) == 1
	})
	if r := pty.Resizes()[0]; r != [2]int{100, 30} {
		t.Errorf("resize = %v, want [100 30]", r)
	}

	// Client closes: the server lets go of the PTY subscription.
	if err := c.Close(websocket.StatusNormalClosure, "detach"); err != nil {
		t.Fatalf("close: %v", err)
	}
	eventually(t, "the server released the PTY subscription", func() bool { return pty.Subscribers() == 0 })
}

func TestAttachEndsWhenOutputEnds(t *testing.T) {
	env, pty := liveC1(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialC1(ctx, t, env, pty)
	pty.Output([]byte("bye\r\n"))
	pty.EndOutput()
	readUntil(ctx, t, c, "bye\r\n")
	_, _, err := c.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure || !strings.Contains(ce.Reason, "output ended") {
		t.Fatalf("after the CLI's output ended, read = %v, want a normal close saying the output ended", err)
	}
}

func TestAttachRefusedWithoutLiveGuest(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "p1", "coder", v1alpha1.ConversationPaused)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, attachURL(env, "default", "p1"), nil)
	if err == nil {
		t.Fatal("attach to a paused conversation was upgraded")
	}
	if resp == nil || resp.StatusCode != http.StatusConflict {
		t.Fatalf("attach to a paused conversation: %v (response %v), want HTTP 409", err, resp)
	}
}

func TestAttachBadControlMessageClosesWithError(t *testing.T) {
	env, pty := liveC1(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialC1(ctx, t, env, pty)
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"explode"}`)); err != nil {
		t.Fatal(err)
	}
	_, _, err := c.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusInternalError || !strings.Contains(ce.Reason, "explode") {
		t.Fatalf("read after a bad control message = %v, want a close naming it", err)
	}
	eventually(t, "the server released the PTY subscription", func() bool { return pty.Subscribers() == 0 })
}

// What a human types into an attached terminal is announced as the human's,
// line by line and before the keystrokes reach the CLI, so the user turn it
// produces is attributed to human (and anything else to unattributed).
func TestAttachAnnouncesTypedLinesAsHuman(t *testing.T) {
	env, pty := liveC1(t, false)
	uid := env.UID(t, "default", "c1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialC1(ctx, t, env, pty)
	for _, f := range []string{"deplo", "x\x7f", "y to stagin", "g\r", "half a line"} {
		if err := c.Write(ctx, websocket.MessageBinary, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	var calls []convapitest.Expectation
	eventually(t, "the keystrokes reached the PTY", func() bool {
		keys := pty.Keystrokes()
		calls = env.Attribution.Calls() // read after the keystrokes: the announcement precedes its Enter
		if strings.Contains(keys, "g\r") && len(calls) == 0 {
			t.Fatalf("the Enter reached the CLI before the line was announced")
		}
		return strings.HasSuffix(keys, "half a line")
	})
	want := convapitest.Expectation{UID: uid, Speaker: transcriptwire.SpeakerHuman, Text: "deploy to staging"}
	if len(calls) != 1 || calls[0] != want {
		t.Fatalf("announced %+v, want only %+v", calls, want)
	}
}
