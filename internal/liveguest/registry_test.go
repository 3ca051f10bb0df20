package liveguest_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/server"
	"aicli.dev/aicli/guest/sidechannel"
	"aicli.dev/aicli/guest/sidechannel/wire"
	"aicli.dev/aicli/internal/gateway"
	"aicli.dev/aicli/internal/gateway/gatewaytest"
	"aicli.dev/aicli/internal/liveguest"
)

// fakePTY is the guest's side: a PTY whose status the test sets. Only
// Status and (for pushFakePTY) WatchStatus are implemented.
type fakePTY struct {
	ptyapi.PTY
	mu      sync.Mutex
	info    ptyapi.StatusInfo
	changed chan struct{}
	reads   atomic.Int64 // Status calls
	watches atomic.Int64 // WatchStatus calls
	// endWatch ends the current stream cleanly, after setting the status it
	// carries (a change no stream reports).
	endWatch chan ptyapi.ExecutionStatus
}

func newFakePTY() *fakePTY {
	return &fakePTY{info: ptyapi.StatusInfo{Status: ptyapi.StatusIdle, Alive: true, Harness: "fake"},
		changed: make(chan struct{}), endWatch: make(chan ptyapi.ExecutionStatus, 1)}
}

func (f *fakePTY) set(st ptyapi.ExecutionStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.info.Status = st
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakePTY) Status(context.Context) (ptyapi.StatusInfo, error) {
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.info, nil
}

// pushFakePTY also pushes: the current status, then every change, until
// ctx ends or the test ends the stream through endWatch.
type pushFakePTY struct{ *fakePTY }

func (f pushFakePTY) WatchStatus(ctx context.Context, fn func(ptyapi.StatusInfo) error) error {
	f.watches.Add(1)
	for {
		f.mu.Lock()
		info, changed := f.info, f.changed
		f.mu.Unlock()
		if err := fn(info); err != nil {
			return err
		}
		select {
		case <-changed:
		case st := <-f.endWatch:
			f.mu.Lock()
			f.info.Status = st
			f.mu.Unlock()
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// harness is a registry on a real gateway with one guest dialled in over the
// real side channel, serving p.
type harness struct {
	reg     *liveguest.Registry
	key     types.NamespacedName
	uid     string
	changes chan types.NamespacedName
	guest   *sidechannel.Session
}

func newHarness(t *testing.T, p ptyapi.PTY) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	gw, err := gateway.New(gateway.Options{DataDir: t.TempDir(), Tokens: gatewaytest.NewTokens(),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	h := &harness{key: types.NamespacedName{Namespace: "default", Name: "c1"}, uid: "uid-1",
		changes: make(chan types.NamespacedName, 64)}
	h.reg = &liveguest.Registry{Gateway: gw, Ctx: ctx, Changed: func(k types.NamespacedName) { h.changes <- k }}
	launch, err := h.reg.Prepare(ctx, h.key, h.uid)
	if err != nil {
		t.Fatal(err)
	}
	h.guest, err = sidechannel.Dial(ctx, sidechannel.Bootstrap{
		SocketPath:            launch.HostSocket,
		SupervisorFingerprint: launch.Env[wire.EnvFingerprint],
		ConversationID:        launch.Env[wire.EnvConversationID],
		LaunchToken:           launch.Env[wire.EnvLaunchToken],
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: server.Handler(p)}
	go func() { _ = srv.Serve(h.guest) }()
	t.Cleanup(func() { _ = srv.Close(); _ = h.guest.Close() })
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if _, err := gw.WaitGuest(wctx, h.uid); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := h.reg.Guest(h.key, h.uid); !ok {
		t.Fatal("the registry does not see the connected guest")
	}
	return h
}

// waitChanged waits for a reconcile request of the harness's conversation.
func (h *harness) waitChanged(t *testing.T, what string) {
	t.Helper()
	select {
	case k := <-h.changes:
		if k != h.key {
			t.Fatalf("%s: Changed(%v), want %v", what, k, h.key)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no Changed", what)
	}
}

// noChange fails if a reconcile is requested within d.
func (h *harness) noChange(t *testing.T, d time.Duration, what string) {
	t.Helper()
	select {
	case k := <-h.changes:
		t.Fatalf("%s: unexpected Changed(%v)", what, k)
	case <-time.After(d):
	}
}

func (h *harness) status(t *testing.T) ptyapi.ExecutionStatus {
	t.Helper()
	info, ok := h.reg.Status(h.uid)
	if !ok {
		t.Fatal("no status recorded")
	}
	return info.Status
}

// A pushed change reaches the registry and asks for a reconcile at once,
// and the guest's status is never read (no polling).
func TestPushedStatusTriggersChangedWithoutPolling(t *testing.T) {
	f := newFakePTY()
	h := newHarness(t, pushFakePTY{f})
	h.waitChanged(t, "the first status")
	if st := h.status(t); st != ptyapi.StatusIdle {
		t.Fatalf("recorded %s, want IDLE", st)
	}
	for _, st := range []ptyapi.ExecutionStatus{ptyapi.StatusBusy, ptyapi.StatusIdle, ptyapi.StatusBusy} {
		f.set(st)
		h.waitChanged(t, "push of "+string(st))
		if got := h.status(t); got != st {
			t.Fatalf("recorded %s after the push of %s", got, st)
		}
	}
	// A push that changes nothing the conversation shows asks for nothing.
	f.mu.Lock()
	f.info.PendingMessages = 3
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
	h.noChange(t, 300*time.Millisecond, "a pending-count change")
	if n := f.reads.Load(); n != 0 {
		t.Fatalf("the registry read Status %d times from a guest that pushes", n)
	}
}

// When the stream ends on a live connection the registry watches again and
// gets the status it missed.
func TestEndedStreamIsWatchedAgain(t *testing.T) {
	f := newFakePTY()
	h := newHarness(t, pushFakePTY{f})
	h.waitChanged(t, "the first status")
	// Changed as the stream ends: the next stream's first status brings it.
	f.endWatch <- ptyapi.StatusBusy
	h.waitChanged(t, "the status after the re-watch")
	if st := h.status(t); st != ptyapi.StatusBusy {
		t.Fatalf("recorded %s, want BUSY", st)
	}
	if n := f.watches.Load(); n != 2 {
		t.Fatalf("%d watches, want 2", n)
	}
	if n := f.reads.Load(); n != 0 {
		t.Fatalf("the registry read Status %d times", n)
	}
}

// A guest that does not push (older than the stream) is polled instead.
func TestGuestWithoutPushIsPolled(t *testing.T) {
	f := newFakePTY()
	h := newHarness(t, f)
	h.waitChanged(t, "the first polled status")
	f.set(ptyapi.StatusBusy)
	h.waitChanged(t, "the polled change")
	if st := h.status(t); st != ptyapi.StatusBusy {
		t.Fatalf("recorded %s, want BUSY", st)
	}
	if f.reads.Load() == 0 {
		t.Fatal("never polled")
	}
}

// A dropped connection asks for a reconcile (the controller then finds the
// guest gone).
func TestDroppedConnectionTriggersChanged(t *testing.T) {
	h := newHarness(t, pushFakePTY{newFakePTY()})
	h.waitChanged(t, "the first status")
	_ = h.guest.Close()
	h.waitChanged(t, "the dropped connection")
	if _, ok := h.reg.PTY(h.uid); ok {
		t.Fatal("a dropped guest is still live")
	}
}

// TestMarkBusyIsReadOnceAndAsksForAnotherLook: an accepted message reads BUSY
// at the controller's next Status even when the guest is already back to
// IDLE, once, and the registry then asks for a reconcile to read IDLE.
func TestMarkBusyIsReadOnceAndAsksForAnotherLook(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "c"}
	var changed []types.NamespacedName
	r := &liveguest.Registry{Changed: func(k types.NamespacedName) { changed = append(changed, k) }}
	r.MarkBusy("unknown") // no session: nothing to mark, nothing asked
	if len(changed) != 0 {
		t.Fatalf("Changed for an unknown conversation: %v", changed)
	}
	r.Record(key, "uid-1", ptyapi.StatusInfo{Status: ptyapi.StatusIdle, Alive: true})
	r.MarkBusy("uid-1")
	if len(changed) != 1 {
		t.Fatalf("MarkBusy did not ask for a reconcile: %v", changed)
	}
	if info, _ := r.Status("uid-1"); info.Status != ptyapi.StatusBusy {
		t.Fatalf("first read after MarkBusy = %s, want BUSY", info.Status)
	}
	if len(changed) != 2 {
		t.Fatalf("reading a latched BUSY over an IDLE guest did not ask for another look: %v", changed)
	}
	if info, _ := r.Status("uid-1"); info.Status != ptyapi.StatusIdle {
		t.Fatalf("second read = %s, want the guest's IDLE", info.Status)
	}
	// An exited CLI is never dressed up as BUSY.
	r.Record(key, "uid-1", ptyapi.StatusInfo{Status: ptyapi.StatusExited})
	r.MarkBusy("uid-1")
	if info, _ := r.Status("uid-1"); info.Status != ptyapi.StatusExited {
		t.Fatalf("exited CLI read as %s", info.Status)
	}
}
