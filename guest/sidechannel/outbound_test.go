package sidechannel_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"aicli.dev/aicli/guest/sidechannel"
	"aicli.dev/aicli/internal/gateway"
)

// streamEcho answers every guest-opened stream with "conv:" and what it read.
type streamEcho struct{}

func (streamEcho) ServeGuestStream(g gateway.GuestStream, st net.Conn) {
	conv := g.ConversationID
	defer func() { _ = st.Close() }()
	b, _ := io.ReadAll(st)
	_, _ = st.Write([]byte(conv + ":" + string(b)))
}

// outboundRoundTrip opens a stream through o, writes msg, half-closes and returns the reply.
func outboundRoundTrip(t *testing.T, o *sidechannel.Outbound, msg string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := o.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	_ = st.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := st.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	_ = st.Close() // yamux: half-close, the reply still arrives
	b, err := io.ReadAll(st)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOutboundFollowsRedial: streams opened through Outbound reach the supervisor, wait while the session is
// down, and flow again over the re-dialed session after a supervisor restart.
func TestOutboundFollowsRedial(t *testing.T) {
	dataDir, store := t.TempDir(), &memStore{kv: map[string][]byte{}}
	opts := gateway.Options{DataDir: dataDir, Tokens: store, Logger: quiet, GuestStreams: streamEcho{}}
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	b := bootstrapFor(t, g, "conv-o")
	out := &sidechannel.Outbound{}
	b.Outbound = out
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = sidechannel.Serve(ctx, b, http.NotFoundHandler(), quiet) }()

	// Before the first session exists Open waits, bounded by its context.
	short, scancel := context.WithTimeout(context.Background(), time.Millisecond)
	if st, err := out.Open(short); err == nil { // may or may not have a session yet; must not hang
		_ = st.Close()
	}
	scancel()

	if got := outboundRoundTrip(t, out, "one"); got != "conv-o:one" {
		t.Fatalf("reply %q", got)
	}
	if err := g.Close(); err != nil { // supervisor restart: the session drops, the guest re-dials
		t.Fatal(err)
	}
	g2, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g2.Close() })
	if _, err := g2.Prepare(context.Background(), "conv-o"); err != nil {
		t.Fatal(err)
	}
	if got := outboundRoundTrip(t, out, "two"); got != "conv-o:two" {
		t.Fatalf("reply after redial %q", got)
	}

	// With Serve stopped, Open gives up when its context ends.
	cancel()
	deadline, dcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer dcancel()
	eventuallyNoSession := func() error {
		st, err := out.Open(deadline)
		if err == nil {
			_ = st.Close()
			return errors.New("opened a stream after Serve stopped")
		}
		return err
	}
	var err2 error
	for range 50 { // Serve clears the session asynchronously after cancel
		if err2 = eventuallyNoSession(); errors.Is(err2, sidechannel.ErrNoSession) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.Is(err2, sidechannel.ErrNoSession) {
		t.Fatalf("Open after Serve stopped: %v", err2)
	}
}
