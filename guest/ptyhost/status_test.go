package ptyhost

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/fake"
	"aicli.dev/aicli/guest/ptyapi"
)

// pushed is one status WatchStatus delivered, stamped when it arrived; an
// IDLE one carries the screen as it was then.
type pushed struct {
	at     time.Time
	info   ptyapi.StatusInfo
	screen string
}

// statusLog records a WatchStatus stream until the test ends.
type statusLog struct {
	mu     sync.Mutex
	events []pushed
	done   chan error
}

func watchLog(t *testing.T, h *Host) *statusLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &statusLog{done: make(chan error, 1)}
	go func() {
		l.done <- h.WatchStatus(ctx, func(info ptyapi.StatusInfo) error {
			p := pushed{at: time.Now(), info: info}
			if info.Status == ptyapi.StatusIdle {
				scr, _ := h.RenderScreen(ctx)
				p.screen = strings.Join(scr.Lines, "\n")
			}
			l.mu.Lock()
			l.events = append(l.events, p)
			l.mu.Unlock()
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-l.done; !errors.Is(err, context.Canceled) {
			t.Errorf("WatchStatus ended with %v, want context.Canceled", err)
		}
	})
	return l
}

// since returns the events from index i on.
func (l *statusLog) since(i int) []pushed {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]pushed(nil), l.events[min(i, len(l.events)):]...)
}

func (l *statusLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// last returns the latest event (zero before the first).
func (l *statusLog) last() pushed {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) == 0 {
		return pushed{}
	}
	return l.events[len(l.events)-1]
}

// waitPushed waits until the latest pushed status is want and returns when it arrived.
func (l *statusLog) waitPushed(t *testing.T, want ptyapi.ExecutionStatus) time.Time {
	t.Helper()
	eventually(t, 10*time.Second, "pushed "+string(want), func() bool { return l.last().info.Status == want })
	return l.last().at
}

// waitPushedFrom waits for the first status want pushed at index mark or
// later and returns when it arrived.
func (l *statusLog) waitPushedFrom(t *testing.T, mark int, want ptyapi.ExecutionStatus) time.Time {
	t.Helper()
	var at time.Time
	eventually(t, 10*time.Second, "pushed "+string(want), func() bool {
		for _, e := range l.since(mark) {
			if e.info.Status == want {
				at = e.at
				return true
			}
		}
		return false
	})
	return at
}

// sendWatched starts h with the fake's reply delay, watches its status
// until IDLE and sends text. It returns the log, the index of the first
// status pushed after the send, and when the send began.
func sendWatched(t *testing.T, h *Host, delay, text string) (*statusLog, int, time.Time) {
	t.Helper()
	start(t, h, ptyapi.StartRequest{Env: map[string]string{"AICLI_FAKE_DELAY": delay}})
	log := watchLog(t, h)
	log.waitPushed(t, ptyapi.StatusIdle)
	mark, sent := log.len(), time.Now()
	if err := h.SendMessage(context.Background(), text); err != nil {
		t.Fatal(err)
	}
	return log, mark, sent
}

// waitScreenAt polls the screen every millisecond until it shows substr and
// returns when it first did.
func waitScreenAt(t *testing.T, h *Host, substr string) time.Time {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if strings.Contains(screenText(t, h), substr) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("screen never showed %q", substr)
		}
		time.Sleep(time.Millisecond)
	}
}

// An accepted message reads BUSY from its acceptance (synchronously, and as
// pushed) until its reply is on the screen, and IDLE is pushed promptly after:
// for a turn the screen shows busy, and for one too quick to be seen.
func TestWatchStatusNoIdleBetweenAcceptAndReply(t *testing.T) {
	for _, c := range []struct {
		delay string
		// maxLag bounds reply on screen → IDLE pushed.
		maxLag time.Duration
	}{
		{"300ms", 150 * time.Millisecond},
		// The busy frame may be gone before the screen is evaluated: the
		// no-reaction rule ends the turn DefaultReactWithin after the delivery.
		{"0s", harness.DefaultReactWithin + 300*time.Millisecond},
	} {
		t.Run("delay "+c.delay, func(t *testing.T) {
			h := newHost(t, newEnv(t))
			start(t, h, ptyapi.StartRequest{Env: map[string]string{"AICLI_FAKE_DELAY": c.delay}})
			log := watchLog(t, h)
			log.waitPushed(t, ptyapi.StatusIdle)
			for turn := 1; turn <= 3; turn++ {
				mark := log.len()
				text := fmt.Sprintf("message %d", turn)
				if err := h.SendMessage(context.Background(), text); err != nil {
					t.Fatal(err)
				}
				if st := status(t, h).Status; st != ptyapi.StatusBusy {
					t.Fatalf("turn %d: Status %s right after the acceptance, want BUSY", turn, st)
				}
				reply := fmt.Sprintf("fake[turn %d]: %s", turn, text)
				replied := waitScreenAt(t, h, reply)
				idle := log.waitPushedFrom(t, mark, ptyapi.StatusIdle)
				events := log.since(mark)
				if events[0].info.Status != ptyapi.StatusBusy {
					t.Fatalf("turn %d: first status pushed after the acceptance is %s, want BUSY", turn, events[0].info.Status)
				}
				for _, e := range events {
					if e.info.Status == ptyapi.StatusIdle && !strings.Contains(e.screen, reply) {
						t.Fatalf("turn %d: IDLE pushed before the reply was on the screen:\n%s", turn, e.screen)
					}
				}
				if lag := idle.Sub(replied); lag > c.maxLag {
					t.Fatalf("turn %d: IDLE pushed %v after the reply showed, want ≤ %v", turn, lag, c.maxLag)
				}
				t.Logf("turn %d: reply on screen → IDLE pushed %v (negative: before the 1 ms screen poll saw the reply)", turn, idle.Sub(replied))
			}
		})
	}
}

// reactFake is the fake harness with its ReactWithin set.
type reactFake struct {
	*fake.Adapter
	react time.Duration
}

func (f reactFake) Delivery() harness.DeliveryPolicy {
	p := f.Adapter.Delivery()
	p.ReactWithin = f.react
	return p
}

// blindFake is the fake harness whose busy screen is never recognised: a
// CLI that does not visibly react to a message.
type blindFake struct{ reactFake }

func (b blindFake) Classify(s ptyapi.Screen) (ptyapi.ExecutionStatus, bool) {
	st, ok := b.Adapter.Classify(s)
	if st == ptyapi.StatusBusy {
		return ptyapi.StatusIdle, ok
	}
	return st, ok
}

// cuelessFake is the fake harness whose busy screen carries no recognised
// cue (Classify finds none): it reads BUSY as a guess, which is no evidence
// that the turn started.
type cuelessFake struct{ reactFake }

func (f cuelessFake) Classify(s ptyapi.Screen) (ptyapi.ExecutionStatus, bool) {
	st, ok := f.Adapter.Classify(s)
	if st == ptyapi.StatusBusy {
		return "", false
	}
	return st, ok
}

// startScreenFake is the fake harness declaring every idle screen its start
// screen, as OpenCode's looks until the first message's session exists.
type startScreenFake struct{ reactFake }

func (startScreenFake) IsStartScreen(ptyapi.Screen) bool { return true }

var (
	_ harness.Adapter       = blindFake{}
	_ harness.Adapter       = cuelessFake{}
	_ harness.StartScreener = startScreenFake{}
)

// A CLI never seen reacting ends the turn once ReactWithin has passed since
// the delivery and its screen has been quiet for turnQuietEnd, or, drawing
// all along, three ReactWithin after the delivery: not before, and not never.
func TestTurnNeverSeenBusyEndsAfterReactWithinAndQuiet(t *testing.T) {
	for _, c := range []struct {
		name, delay string
		react       time.Duration
		// capped: the fake's spinner draws until after 3×react.
		capped bool
	}{
		// The reply comes before ReactWithin has passed: ReactWithin counts.
		{"quick reply", "100ms", 700 * time.Millisecond, false},
		// The reply comes later: quiet after it counts.
		{"slow reply", "900ms", 600 * time.Millisecond, false},
		// Output never stops before the cap.
		{"drawing all along", "2s", 200 * time.Millisecond, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHostWith(t, newEnv(t), func(a *fake.Adapter) harness.Adapter { return blindFake{reactFake{a, c.react}} })
			log, mark, sent := sendWatched(t, h, c.delay, "hello")
			if c.capped {
				idle := log.waitPushedFrom(t, mark, ptyapi.StatusIdle)
				if d := idle.Sub(sent); d < 3*c.react || d > 3*c.react+500*time.Millisecond {
					t.Fatalf("IDLE pushed %v after the send, want about %v", d, 3*c.react)
				}
				return
			}
			replied := waitScreenAt(t, h, "fake[turn 1]: hello")
			idle := log.waitPushedFrom(t, mark, ptyapi.StatusIdle)
			want := sent.Add(c.react)
			if q := replied.Add(turnQuietEnd); q.After(want) {
				want = q
			}
			if d := idle.Sub(want); d < -100*time.Millisecond || d > 500*time.Millisecond {
				t.Fatalf("IDLE pushed %v after the send, %v after the reply; want about %v after the send",
					idle.Sub(sent), idle.Sub(replied), want.Sub(sent))
			}
			for _, e := range log.since(mark) {
				if e.info.Status == ptyapi.StatusIdle && !strings.Contains(e.screen, "fake[turn 1]: hello") {
					t.Fatalf("IDLE pushed before the reply was on the screen:\n%s", e.screen)
				}
			}
		})
	}
}

// slowReader watches h with a reader stuck in its first call until release
// is closed; got receives every status it is called with.
func slowReader(t *testing.T, h *Host) (got chan ptyapi.StatusInfo, release chan struct{}) {
	t.Helper()
	start(t, h, ptyapi.StartRequest{Env: map[string]string{"AICLI_FAKE_DELAY": "100ms"}})
	waitStatus(t, h, ptyapi.StatusIdle)
	got, release = make(chan ptyapi.StatusInfo, 16), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		_ = h.WatchStatus(ctx, func(info ptyapi.StatusInfo) error {
			got <- info
			<-release
			return nil
		})
	}()
	if first := <-got; first.Status != ptyapi.StatusIdle || !first.Alive || first.Harness != fake.Name {
		t.Fatalf("first status %+v, want the current one (IDLE)", first)
	}
	return got, release
}

// A slow reader skips intermediate states but always gets the latest one.
func TestWatchStatusCoalescesForASlowReader(t *testing.T) {
	h := newHost(t, newEnv(t))
	got, release := slowReader(t, h)
	// BUSY, then IDLE again, while the reader is stuck in its first call.
	if err := h.SendMessage(context.Background(), "quick"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, "fake[turn 1]: quick")
	waitStatus(t, h, ptyapi.StatusIdle)
	close(release)
	select {
	case info := <-got:
		t.Fatalf("after the slow call: %+v pushed; the latest status equals the one the reader has", info)
	case <-time.After(300 * time.Millisecond):
		// The intermediate BUSY was skipped: nothing to deliver.
	}
}

// A slow reader that missed a change to a different status gets that status.
func TestWatchStatusDeliversTheLatestAfterASlowCall(t *testing.T) {
	h := newHost(t, newEnv(t))
	got, release := slowReader(t, h)
	if err := h.SendMessage(context.Background(), "!crash"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, h, ptyapi.StatusExited)
	close(release)
	info := <-got
	if info.Status != ptyapi.StatusExited || info.Alive || info.ExitCode == nil || *info.ExitCode != 3 {
		t.Fatalf("after the slow call: %+v, want EXITED with code 3", info)
	}
}

func TestWatchStatusEnds(t *testing.T) {
	h := newHost(t, newEnv(t))
	// Before Start: the status so far, then the stream waits.
	boom := errors.New("boom")
	if err := h.WatchStatus(context.Background(), func(info ptyapi.StatusInfo) error {
		if info.Status != ptyapi.StatusStarting || info.Alive {
			t.Errorf("before start: %+v", info)
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("fn's error: WatchStatus returned %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := h.WatchStatus(ctx, func(ptyapi.StatusInfo) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx's end: WatchStatus returned %v", err)
	}
	// Start is pushed; Close ends the stream cleanly.
	got := make(chan ptyapi.StatusInfo, 64)
	done := make(chan error, 1)
	go func() {
		done <- h.WatchStatus(context.Background(), func(info ptyapi.StatusInfo) error { got <- info; return nil })
	}()
	<-got
	start(t, h, ptyapi.StartRequest{})
	eventually(t, 10*time.Second, "the start pushed", func() bool {
		select {
		case info := <-got:
			return info.Alive && info.Harness == fake.Name
		default:
			return false
		}
	})
	_ = h.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after Close: WatchStatus returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WatchStatus did not end on Close")
	}
}

// A turn seen busy only as a guess (a screen without cues), or back on the
// start screen after being seen busy, has not ended: it ends by ReactWithin,
// as for a CLI never seen reacting.
func TestUnprovenTurnEndsByReactWithin(t *testing.T) {
	const react = 800 * time.Millisecond
	for name, wrap := range map[string]func(*fake.Adapter) harness.Adapter{
		"busy without cues":   func(a *fake.Adapter) harness.Adapter { return cuelessFake{reactFake{a, react}} },
		"on the start screen": func(a *fake.Adapter) harness.Adapter { return startScreenFake{reactFake{a, react}} },
	} {
		t.Run(name, func(t *testing.T) {
			h := newHostWith(t, newEnv(t), wrap)
			log, mark, sent := sendWatched(t, h, "200ms", "hello")
			replied := waitScreenAt(t, h, "fake[turn 1]: hello")
			idle := log.waitPushedFrom(t, mark, ptyapi.StatusIdle)
			if d := idle.Sub(sent); d < react || d > react+600*time.Millisecond {
				t.Fatalf("IDLE pushed %v after the send (%v after the reply), want about %v", d, idle.Sub(replied), react)
			}
		})
	}
}

// cueAdapter reads "READY" as IDLE and anything else as no cue.
type cueAdapter struct{ rawAdapter }

func (cueAdapter) Classify(s ptyapi.Screen) (ptyapi.ExecutionStatus, bool) {
	for _, l := range s.Lines {
		if strings.Contains(l, "READY") {
			return ptyapi.StatusIdle, true
		}
	}
	return "", false
}

// A screen without cues for less than guessHold (a redraw in flight) keeps
// the status of the last recognised one; for longer it reads BUSY.
func TestBriefScreenWithoutCuesKeepsTheStatus(t *testing.T) {
	reg, err := harness.NewRegistry(cueAdapter{rawAdapter{path: "/bin/sh", args: []string{"-c",
		`printf 'READY\n'; while read l; do printf '\033[2J\033[H'; sleep "$l"; printf 'READY\n'; done`}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	h, err := New(Options{Registry: reg, Home: dir + "/home", WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	if _, err := h.Start(context.Background(), ptyapi.StartRequest{Harness: "raw"}); err != nil {
		t.Fatal(err)
	}
	log := watchLog(t, h)
	log.waitPushed(t, ptyapi.StatusIdle)
	for _, c := range []struct {
		sleep    string
		wantBusy bool
	}{{"0.03", false}, {"0.5", true}} {
		mark := log.len()
		if err := h.SendString(context.Background(), c.sleep+"\r"); err != nil {
			t.Fatal(err)
		}
		// The screen clears, then shows READY again after the sleep.
		time.Sleep(100 * time.Millisecond)
		waitScreen(t, h, "READY")
		time.Sleep(50 * time.Millisecond)
		busy := false
		for _, e := range log.since(mark) {
			busy = busy || e.info.Status == ptyapi.StatusBusy
		}
		if busy != c.wantBusy {
			t.Fatalf("no cue for %ss: BUSY pushed %v, want %v (%v)", c.sleep, busy, c.wantBusy, log.since(mark))
		}
		log.waitPushed(t, ptyapi.StatusIdle)
	}
}
