package gateway_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"aicli.dev/aicli/guest/sidechannel"
	"aicli.dev/aicli/guest/sidechannel/wire"
	"aicli.dev/aicli/internal/gateway"
	"aicli.dev/aicli/internal/store"
)

// TestWithPebbleStore runs the gateway on the supervisor's real pebble store (the TokenStore the lead wires in):
// admission, replay refusal, and reconnection after both the gateway and the store were closed and reopened, as in
// a full supervisor restart.
func TestWithPebbleStore(t *testing.T) {
	dataDir := t.TempDir()
	open := func() *store.Store {
		s, err := store.Open(filepath.Join(dataDir, "store"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	newGW := func(s *store.Store) *gateway.Gateway {
		g, err := gateway.New(gateway.Options{DataDir: dataDir, Tokens: s, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	st := open()
	g := newGW(st)
	l, err := g.Prepare(context.Background(), "conv-pebble")
	if err != nil {
		t.Fatal(err)
	}
	b := hostBootstrap(l)
	if _, err := st.GetKV(context.Background(), "gateway-launch", b.LaunchToken); err == nil {
		t.Fatal("the raw token is a store key")
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sidechannel.Serve(ctx, b, echoHandler("conv-pebble"), slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	gc := waitGuest(t, g, "conv-pebble")
	if got := get(t, gc, "/p"); got != "guest conv-pebble /p" {
		t.Fatalf("reply %q", got)
	}
	if _, err := sidechannel.Dial(context.Background(), b, quiet); err == nil {
		t.Fatal("launch token replay admitted")
	}
	if n := g.Stats().Refused[wire.ReasonTokenUnknown]; n != 1 {
		t.Fatalf("replay refusals %d", n)
	}

	// Full restart: gateway and store closed, both reopened from disk.
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = open()
	t.Cleanup(func() { _ = st.Close() })
	g = newGW(st)
	t.Cleanup(func() { _ = g.Close() })
	if _, err := g.Prepare(context.Background(), "conv-pebble"); err != nil {
		t.Fatal(err)
	}
	gc2 := waitGuest(t, g, "conv-pebble")
	if gc2.GuestFingerprint() != gc.GuestFingerprint() {
		t.Fatal("reconnected with another key")
	}
	if got := get(t, gc2, "/q"); got != "guest conv-pebble /q" {
		t.Fatalf("reply %q", got)
	}

	// Release removes the durable reconnect record.
	if err := g.Release("conv-pebble"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetKV(context.Background(), "gateway-reconnect", "conv-pebble"); err == nil {
		t.Fatal("reconnect record survived Release")
	}
}
