package gateway_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/guest/sidechannel"
	"aicli.dev/aicli/guest/sidechannel/wire"
)

// TestStoreOutageIsTransient: while the token store fails, the guest is refused as "unavailable" without losing
// its token, keeps retrying, and is admitted once the store is back.
func TestStoreOutageIsTransient(t *testing.T) {
	e := newEnv(t)
	b := e.prepare("conv-o")
	e.store.setFail(errors.New("disk on fire"))
	_, err := sidechannel.Dial(context.Background(), b, quiet)
	var refused *sidechannel.RefusedError
	if !errors.As(err, &refused) || refused.Reason != wire.ReasonUnavailable {
		t.Fatalf("during outage: %v", err)
	}
	e.waitRefusal(wire.ReasonUnavailable, 1)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sidechannel.Serve(ctx, b, echoHandler("conv-o"), quiet) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually(t, 5*time.Second, func() error { // Serve is retrying against the outage
		if e.refusals(wire.ReasonUnavailable) < 2 {
			return errors.New("no retry yet")
		}
		return nil
	})
	e.store.setFail(nil)
	if got := get(t, waitGuest(t, e.g, "conv-o"), "/back"); got != "guest conv-o /back" {
		t.Fatalf("reply %q", got)
	}
}

// TestAttackStorm: hostile connections of several kinds in parallel with real guests; every real guest is
// admitted and served, and every hostile connection is refused and counted.
func TestAttackStorm(t *testing.T) {
	e := newEnv(t)
	target := e.prepare("conv-target")
	const perKind = 8
	attacks := map[string]func(t *testing.T){
		"garbage": func(t *testing.T) {
			c := dialUnix(t, target.SocketPath)
			junk := make([]byte, 512)
			_, _ = rand.Read(junk)
			_, _ = c.Write(junk)
			assertClosedByPeer(t, c)
		},
		"no certificate": func(t *testing.T) {
			_, _, _ = (&rawGuest{}).hello(t, target.SocketPath, target.SupervisorFingerprint,
				wire.Hello{ConversationID: "conv-target", LaunchToken: "x"})
		},
		"guessed token": func(t *testing.T) {
			rep, _, err := newRawGuest(t).hello(t, target.SocketPath, target.SupervisorFingerprint,
				wire.Hello{ConversationID: "conv-target", LaunchToken: rand.Text()})
			if err != nil || rep.OK || rep.Reason != wire.ReasonTokenUnknown {
				t.Errorf("guessed token: %+v %v", rep, err)
			}
		},
		"guessed reconnect secret": func(t *testing.T) {
			rep, _, err := newRawGuest(t).hello(t, target.SocketPath, target.SupervisorFingerprint,
				wire.Hello{ConversationID: "conv-target", ReconnectSecret: rand.Text()})
			if err != nil || rep.OK || rep.Reason != wire.ReasonReconnectRefused {
				t.Errorf("guessed secret: %+v %v", rep, err)
			}
		},
	}
	var wg sync.WaitGroup
	for _, attack := range attacks {
		for range perKind {
			wg.Add(1)
			go func() {
				defer wg.Done()
				attack(t)
			}()
		}
	}
	const guests = 10
	boots := make([]sidechannel.Bootstrap, guests)
	for i := range guests {
		boots[i] = e.prepare(fmt.Sprintf("conv-g%d", i))
	}
	for i := range guests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := sidechannel.Dial(context.Background(), boots[i], quiet)
			if err != nil {
				t.Errorf("real guest %d: %v", i, err)
				return
			}
			t.Cleanup(func() { _ = s.Close() })
			go func() { _ = http.Serve(s, echoHandler(boots[i].ConversationID)) }()
		}()
	}
	wg.Wait()
	for i := range guests {
		conv := boots[i].ConversationID
		if got := get(t, waitGuest(t, e.g, conv), "/ok"); got != "guest "+conv+" /ok" {
			t.Fatalf("reply %q", got)
		}
	}
	eventually(t, 10*time.Second, func() error {
		st := e.g.Stats()
		var total uint64
		for _, n := range st.Refused {
			total += n
		}
		if total != uint64(len(attacks)*perKind) || st.Admitted != guests {
			return fmt.Errorf("stats %+v, want %d refusals and %d admissions", st, len(attacks)*perKind, guests)
		}
		return nil
	})
	// The target conversation's real guest is still welcome.
	dialServe(t, target)
	waitGuest(t, e.g, "conv-target")
}
