package toolrelay_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/toolrelay"
	"aicli.dev/aicli/guest/toolwire"
)

// echoOpener stands in for the side channel: each stream is served by a fake tool server that checks the header,
// records the request and echoes stdin to stdout with the token in front.
type echoOpener struct {
	mu   sync.Mutex
	reqs []toolwire.Request
}

func (o *echoOpener) Open(context.Context) (net.Conn, error) {
	guest, sup := net.Pipe()
	go o.serve(sup)
	return guest, nil
}

func (o *echoOpener) serve(st net.Conn) {
	defer func() { _ = st.Close() }()
	var h egresswire.Header
	if err := egresswire.ReadFrame(st, &h); err != nil || h.Kind != egresswire.KindTool {
		return
	}
	req, err := toolwire.ReadRequest(st)
	if err != nil {
		return
	}
	o.mu.Lock()
	o.reqs = append(o.reqs, req)
	o.mu.Unlock()
	var in bytes.Buffer
	for {
		f, err := toolwire.ReadFrame(st)
		if err != nil {
			return
		}
		if f.Type == toolwire.TypeStdinEOF {
			break
		}
		in.Write(f.Payload)
	}
	_ = toolwire.WriteData(st, toolwire.TypeStdout, append([]byte(req.Token+":"), in.Bytes()...))
	_ = toolwire.WriteJSON(st, toolwire.TypeExit, toolwire.Exit{Code: 3})
}

func startRelay(t *testing.T, o toolrelay.Opener) *toolrelay.Relay {
	t.Helper()
	dir, err := os.MkdirTemp("", "tr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	r, err := toolrelay.Listen(toolrelay.Options{Streams: o, Socket: filepath.Join(dir, "sub", "tool.sock")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// dialCall makes one call the way aicli-tool does.
func dialCall(t *testing.T, sock string, req toolwire.Request, stdin string) (string, toolwire.Exit) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		_ = toolwire.WriteJSON(c, toolwire.TypeRequest, req)
		_ = toolwire.WriteData(c, toolwire.TypeStdin, []byte(stdin))
		_ = toolwire.WriteFrame(c, toolwire.TypeStdinEOF, nil)
	}()
	var out bytes.Buffer
	for {
		f, err := toolwire.ReadFrame(c)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		switch f.Type {
		case toolwire.TypeStdout:
			out.Write(f.Payload)
		case toolwire.TypeExit:
			var ex toolwire.Exit
			if err := toolwire.Decode(f, &ex); err != nil {
				t.Fatal(err)
			}
			return out.String(), ex
		}
	}
}

func TestRelay(t *testing.T) {
	o := &echoOpener{}
	r := startRelay(t, o)
	st, err := os.Stat(r.Addr())
	if err != nil || st.Mode().Perm() != 0o666 {
		t.Fatalf("socket mode %v err %v", st.Mode(), err)
	}
	call := toolwire.Request{Op: toolwire.OpCall, Tool: "greet", Args: []string{"x"}, Token: "forged-by-caller"}

	if out, ex := dialCall(t, r.Addr(), call, "in"); ex.Code != toolwire.ExitNotGranted || ex.Message != "greet: not granted to this agent" || out != "" {
		t.Fatalf("before capabilities: %q %+v", out, ex)
	}
	if err := r.SetCapabilities(context.Background(), ptyapi.Capabilities{Tools: []ptyapi.ToolCap{{Name: "greet", Token: "T1"}}}); err != nil {
		t.Fatal(err)
	}
	out, ex := dialCall(t, r.Addr(), call, "hello")
	if ex.Code != 3 || out != "T1:hello" {
		t.Fatalf("call: %q %+v", out, ex)
	}
	if got := o.reqs[len(o.reqs)-1]; got.Token != "T1" || got.Tool != "greet" || len(got.Args) != 1 {
		t.Fatalf("forwarded %+v", got)
	}
	big := bytes.Repeat([]byte("z"), 300_000)
	if out, _ := dialCall(t, r.Addr(), call, string(big)); out != "T1:"+string(big) {
		t.Fatalf("big stdin: %d bytes back", len(out))
	}
	// Delegation presents the delegated tool's own token; an ungranted tool cannot be delegated.
	del := toolwire.Request{Op: toolwire.OpDelegate, Tool: "greet", Delegate: &toolwire.DelegateArgs{Peer: "bob"}}
	r.Set(ptyapi.Capabilities{Tools: []ptyapi.ToolCap{{Name: "greet", Token: "T2"}}})
	if out, _ := dialCall(t, r.Addr(), del, ""); out != "T2:" {
		t.Fatalf("delegate: %q", out)
	}
	other := toolwire.Request{Op: toolwire.OpDelegate, Tool: "search", Delegate: &toolwire.DelegateArgs{Peer: "bob"}}
	if _, ex := dialCall(t, r.Addr(), other, ""); ex.Code != toolwire.ExitNotGranted {
		t.Fatalf("delegate of an ungranted tool: %+v", ex)
	}
	// A new set replaces the old one.
	r.Set(ptyapi.Capabilities{})
	if _, ex := dialCall(t, r.Addr(), call, ""); ex.Code != toolwire.ExitNotGranted {
		t.Fatalf("after revocation: %+v", ex)
	}
}

func TestRelayRejectsMalformed(t *testing.T) {
	r := startRelay(t, &echoOpener{})
	c, err := net.Dial("unix", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.Write([]byte("garbage!"))
	f, err := toolwire.ReadFrame(c)
	if err != nil || f.Type != toolwire.TypeExit {
		t.Fatalf("frame %v err %v", f.Type, err)
	}
	var ex toolwire.Exit
	_ = toolwire.Decode(f, &ex)
	if ex.Code != toolwire.ExitRefused || ex.Refused != toolwire.RefusedMalformed {
		t.Fatalf("exit %+v", ex)
	}
}
