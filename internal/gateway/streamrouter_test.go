package gateway_test

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/guest/toolwire"
	"aicli.dev/aicli/internal/gateway"
)

// TestStreamRouter: the router dispatches by header kind and replays every byte it read, so the handler sees the
// stream as the guest wrote it; unreadable headers go to the egress handler, which refuses them itself.
func TestStreamRouter(t *testing.T) {
	toolHdr := frame(t, egresswire.Header{Kind: egresswire.KindTool})
	proxyHdr := frame(t, egresswire.Header{Kind: egresswire.KindProxy, Target: "example.com:443"})
	cases := []struct {
		name  string
		input []byte
		want  string // "tools" or "egress"
	}{
		{"tool", append(toolHdr, "rest"...), "tools"},
		{"proxy", append(proxyHdr, "rest"...), "egress"},
		{"garbage", []byte("GET / HTTP/1.1\r\n"), "egress"},
		{"oversize", []byte{0xff, 0xff, 'x'}, "egress"},
		{"short", []byte{0}, "egress"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan string, 1)
			handler := func(name string) streamFunc {
				return func(_ string, st net.Conn) {
					defer func() { _ = st.Close() }()
					b, _ := io.ReadAll(st)
					got <- name + ":" + string(b)
				}
			}
			r := &gateway.StreamRouter{Egress: handler("egress"), Tools: handler("tools"), HeaderTimeout: time.Second}
			guest, sup := net.Pipe()
			go r.ServeGuestStream(gateway.GuestStream{ConversationID: "c"}, sup)
			_, _ = guest.Write(tc.input)
			_ = guest.Close()
			select {
			case g := <-got:
				if want := tc.want + ":" + string(tc.input); g != want {
					t.Fatalf("got %q, want %q", g, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no handler ran")
			}
		})
	}
}

// TestStreamRouterNoTools: without a tool server a tool stream is answered with a toolwire refusal.
func TestStreamRouterNoTools(t *testing.T) {
	r := &gateway.StreamRouter{Egress: streamFunc(func(string, net.Conn) { t.Error("egress got a tool stream") })}
	guest, sup := net.Pipe()
	go r.ServeGuestStream(gateway.GuestStream{ConversationID: "c"}, sup)
	go func() { _, _ = guest.Write(frame(t, egresswire.Header{Kind: egresswire.KindTool})) }()
	f, err := toolwire.ReadFrame(guest)
	if err != nil || f.Type != toolwire.TypeExit {
		t.Fatalf("frame %v err %v", f.Type, err)
	}
	var ex toolwire.Exit
	if err := toolwire.Decode(f, &ex); err != nil || ex.Code != toolwire.ExitRefused {
		t.Fatalf("exit %+v %v", ex, err)
	}
}

func frame(t *testing.T, h egresswire.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := egresswire.WriteFrame(&b, h); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
