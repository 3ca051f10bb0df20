package gateway_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"aicli.dev/aicli/guest/sidechannel"
	"aicli.dev/aicli/guest/sidechannel/wire"
)

// TestReconnectAfterSupervisorRestart runs the real guest loop (sidechannel.Serve) against a gateway that is
// closed and replaced by a new one on the same data dir and token store, as after a supervisor restart.
func TestReconnectAfterSupervisorRestart(t *testing.T) {
	e := newEnv(t)
	b := e.prepare("conv-s")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sidechannel.Serve(ctx, b, echoHandler("conv-s"), slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
	gc1 := waitGuest(t, e.g, "conv-s")
	if got := get(t, gc1, "/before"); got != "guest conv-s /before" {
		t.Fatalf("reply %q", got)
	}
	fp := e.g.Fingerprint()

	if err := e.g.Close(); err != nil { // supervisor goes down
		t.Fatal(err)
	}
	select {
	case <-gc1.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("connection survived gateway Close")
	}
	e.g = e.newGateway() // supervisor comes back
	if e.g.Fingerprint() != fp {
		t.Fatal("supervisor fingerprint changed across restart")
	}
	if _, err := e.g.Prepare(context.Background(), "conv-s"); err != nil { // re-adopt the conversation
		t.Fatal(err)
	}
	gc2 := waitGuest(t, e.g, "conv-s")
	if gc2.GuestFingerprint() != gc1.GuestFingerprint() {
		t.Fatalf("reconnected with another key: %s vs %s", gc2.GuestFingerprint(), gc1.GuestFingerprint())
	}
	if got := get(t, gc2, "/after"); got != "guest conv-s /after" {
		t.Fatalf("reply after reconnect %q", got)
	}
	if st := e.g.Stats(); st.Reconnected != 1 || st.Admitted != 0 {
		t.Fatalf("stats after restart %+v", st)
	}

	// A connection dropped by the supervisor side alone is re-established too.
	_ = gc2.Close()
	eventually(t, 10*time.Second, func() error {
		gc3, ok := e.g.Guest("conv-s")
		if !ok || gc3 == gc2 {
			return errors.New("guest has not reconnected yet")
		}
		return nil
	})
	if st := e.g.Stats(); st.Reconnected != 2 {
		t.Fatalf("stats after drop %+v", st)
	}
}

func TestReconnectRequiresSameKeyAndSecret(t *testing.T) {
	e := newEnv(t)
	b := e.prepare("conv-k")
	k1 := newRawGuest(t)
	rep, tc, err := k1.hello(t, b.SocketPath, b.SupervisorFingerprint, wire.Hello{ConversationID: "conv-k", LaunchToken: b.LaunchToken})
	if err != nil || !rep.OK {
		t.Fatalf("first hello: %+v %v", rep, err)
	}
	waitGuest(t, e.g, "conv-k")
	_ = tc.Close()
	eventually(t, 5*time.Second, func() error {
		if _, ok := e.g.Guest("conv-k"); ok {
			return errors.New("still connected")
		}
		return nil
	})
	secret := rep.ReconnectSecret

	// Restart the supervisor: the record must be durable in the token store, not in memory.
	if err := e.g.Close(); err != nil {
		t.Fatal(err)
	}
	e.g = e.newGateway()
	b = e.prepare("conv-k")

	attempts := []struct {
		name  string
		guest *rawGuest
		hello wire.Hello
		want  wire.Reason
	}{
		{"stolen secret, other key", newRawGuest(t), wire.Hello{ConversationID: "conv-k", ReconnectSecret: secret}, wire.ReasonReconnectRefused},
		{"right key, wrong secret", k1, wire.Hello{ConversationID: "conv-k", ReconnectSecret: secret + "x"}, wire.ReasonReconnectRefused},
		{"right key and secret, other conversation", k1, wire.Hello{ConversationID: "conv-other", ReconnectSecret: secret}, wire.ReasonConversationMismatch},
	}
	for _, a := range attempts {
		rep, _, err := a.guest.hello(t, b.SocketPath, b.SupervisorFingerprint, a.hello)
		if err != nil || rep.OK || rep.Reason != a.want {
			t.Fatalf("%s: reply %+v err %v, want refusal %s", a.name, rep, err, a.want)
		}
	}
	e.waitRefusal(wire.ReasonReconnectRefused, 2)
	e.waitRefusal(wire.ReasonConversationMismatch, 1)
	if _, ok := e.g.Guest("conv-k"); ok {
		t.Fatal("a refused reconnect was bound")
	}
	// The failed attempts did not destroy the record: the real guest still comes back, repeatedly.
	for range 2 {
		rep, tc, err = k1.hello(t, b.SocketPath, b.SupervisorFingerprint, wire.Hello{ConversationID: "conv-k", ReconnectSecret: secret})
		if err != nil || !rep.OK || rep.GuestFingerprint != k1.fp {
			t.Fatalf("legit reconnect: %+v %v", rep, err)
		}
		if gc := waitGuest(t, e.g, "conv-k"); gc.GuestFingerprint() != k1.fp {
			t.Fatalf("bound %s", gc.GuestFingerprint())
		}
		_ = tc.Close()
	}
	e.assertNoSecretsLogged(secret, b.LaunchToken)

	// A new launch (new container, new key) replaces the binding: the old key can no longer reconnect.
	k2 := newRawGuest(t)
	rep2, _, err := k2.hello(t, b.SocketPath, b.SupervisorFingerprint, wire.Hello{ConversationID: "conv-k", LaunchToken: b.LaunchToken})
	if err != nil || !rep2.OK {
		t.Fatalf("new launch: %+v %v", rep2, err)
	}
	rep, _, err = k1.hello(t, b.SocketPath, b.SupervisorFingerprint, wire.Hello{ConversationID: "conv-k", ReconnectSecret: secret})
	if err != nil || rep.OK || rep.Reason != wire.ReasonReconnectRefused {
		t.Fatalf("old key after relaunch: %+v %v", rep, err)
	}
}
