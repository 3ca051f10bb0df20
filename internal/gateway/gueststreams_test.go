package gateway_test

import (
	"io"
	"net"
	"testing"
	"time"

	"aicli.dev/aicli/guest/sidechannel/wire"
	"aicli.dev/aicli/internal/gateway"
)

// streamFunc adapts a function to gateway.GuestStreamHandler.
type streamFunc func(conv string, st net.Conn)

func (f streamFunc) ServeGuestStream(g gateway.GuestStream, st net.Conn) { f(g.ConversationID, st) }

// streamFP records the GuestStream of every stream and closes it.
type streamFP chan gateway.GuestStream

func (f streamFP) ServeGuestStream(g gateway.GuestStream, st net.Conn) {
	_ = st.Close()
	f <- g
}

// TestGuestStreamFingerprint: the handler learns the guest key fingerprint of the connection the stream came on.
func TestGuestStreamFingerprint(t *testing.T) {
	seen := make(streamFP, 1)
	e := newEnv(t, func(o *gateway.Options) { o.GuestStreams = seen })
	s := dialServe(t, e.prepare("conv-fp"))
	gc := waitGuest(t, e.g, "conv-fp")
	st, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	_, _ = st.Write([]byte("x"))
	select {
	case g := <-seen:
		if g.ConversationID != "conv-fp" || g.GuestFingerprint == "" || g.GuestFingerprint != gc.GuestFingerprint() {
			t.Fatalf("handler saw %+v, connection fingerprint %q", g, gc.GuestFingerprint())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no stream reached the handler")
	}
}

// TestGuestOpenedStreams: a stream the guest opens reaches Options.GuestStreams with the conversation id, both
// directions work, and the supervisor's own requests to the guest keep working alongside.
func TestGuestOpenedStreams(t *testing.T) {
	type got struct {
		conv string
		data string
	}
	seen := make(chan got, 1)
	e := newEnv(t, func(o *gateway.Options) {
		o.GuestStreams = streamFunc(func(conv string, st net.Conn) {
			defer func() { _ = st.Close() }()
			buf := make([]byte, 4)
			_, _ = io.ReadFull(st, buf)
			seen <- got{conv, string(buf)}
			_, _ = st.Write([]byte("pong"))
		})
	})
	b := e.prepare("conv-gs")
	s := dialServe(t, b)
	gc := waitGuest(t, e.g, "conv-gs")
	st, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	_ = st.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := st.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	reply, err := io.ReadAll(st)
	if err != nil || string(reply) != "pong" {
		t.Fatalf("reply %q err %v", reply, err)
	}
	if g := <-seen; g.conv != "conv-gs" || g.data != "ping" {
		t.Fatalf("handler saw %+v", g)
	}
	if got := get(t, gc, "/after"); got != "guest conv-gs /after" {
		t.Fatalf("supervisor-opened request after a guest stream: %q", got)
	}
}

// TestGuestOpenedStreamWithoutHandler: without a handler the gateway accepts and closes the stream at once (an
// unaccepted stream would make yamux end the session after its open timeout).
func TestGuestOpenedStreamWithoutHandler(t *testing.T) {
	e := newEnv(t)
	b := e.prepare("conv-nh")
	s := dialServe(t, b)
	gc := waitGuest(t, e.g, "conv-nh")
	st, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	_ = st.SetDeadline(time.Now().Add(10 * time.Second))
	if n, err := st.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read %d, %v: want EOF from a stream nobody serves", n, err)
	}
	_ = st.Close()
	if got := get(t, gc, "/still"); got != "guest conv-nh /still" {
		t.Fatalf("session after an unserved stream: %q", got)
	}
}

// TestGuestStreamLimit: a guest that holds more than MaxGuestStreams streams open is disconnected (each stream can
// make the supervisor buffer a yamux window), and the disconnection is counted.
func TestGuestStreamLimit(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	e := newEnv(t, func(o *gateway.Options) {
		o.MaxGuestStreams = 8
		o.GuestStreams = streamFunc(func(_ string, st net.Conn) {
			defer func() { _ = st.Close() }()
			<-hold
		})
	})
	b := e.prepare("conv-lim")
	s := dialServe(t, b)
	gc := waitGuest(t, e.g, "conv-lim")
	for i := range 20 {
		st, err := s.Open()
		if err != nil {
			break // the session may already be gone
		}
		if _, err := st.Write([]byte{byte(i)}); err != nil {
			break
		}
	}
	select {
	case <-gc.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a guest holding 20 streams (limit 8) was not disconnected")
	}
	e.waitRefusal(wire.ReasonStreamLimit, 1)
}
