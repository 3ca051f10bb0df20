package mailbox_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"aicli.dev/aicli/internal/mailbox"
	"aicli.dev/aicli/internal/store"
)

const (
	crashDirEnv   = "AICLI_MAILBOX_CRASH_DIR"
	crashRoundEnv = "AICLI_MAILBOX_CRASH_ROUND"
)

var crashSenders = []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"}

// TestHelperFlood is the child of TestKill9LosesNoAcknowledgedMail: it floods
// bob's inbox from several senders and prints each acknowledgement. It does
// nothing unless started by that test.
func TestHelperFlood(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		return
	}
	fail := func(err error) { fmt.Printf("error %v\n", err); os.Exit(2) }
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	m, err := mailbox.Open(ctx, s, mailbox.Options{})
	if err != nil {
		fail(err)
	}
	var outMu sync.Mutex
	say := func(line string) { outMu.Lock(); _, _ = os.Stdout.WriteString(line); outMu.Unlock() }
	round := os.Getenv(crashRoundEnv)
	say("ready\n")
	for _, from := range crashSenders {
		go func() {
			for i := 0; ; i++ {
				sent, err := m.Append(ctx, mailbox.Message{Namespace: ns, From: from, To: "bob", Body: round + "-" + strconv.Itoa(i)})
				if err != nil {
					say(fmt.Sprintf("error %v\n", err))
					return
				}
				say(fmt.Sprintf("ack %s %s-%d %d\n", from, round, i, sent.Seq))
			}
		}()
	}
	time.Sleep(60 * time.Second) // orphan guard only
	os.Exit(3)
}

func TestKill9LosesNoAcknowledgedMail(t *testing.T) {
	dir := t.TempDir()
	acked := map[string]uint64{} // "sender round-i" → seq, over all rounds
	for round := range 2 {
		// Round 1 appends to the log recovered from round 0's kill.
		for k, seq := range runFloodAndKill(t, dir, round, 3000) {
			acked[k] = seq
		}
		checkFloodAfterKill(t, dir, round, acked)
	}
}

// checkFloodAfterKill reopens dir and checks that bob's inbox holds every
// acknowledged message with its acknowledged sequence, in per-sender order.
func checkFloodAfterKill(t *testing.T, dir string, round int, acked map[string]uint64) {
	t.Helper()
	s := openStore(t, dir)
	defer s.Close()
	m, err := mailbox.Open(ctxT(t), s, mailbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := inbox(t, m, "bob", mailbox.InboxOptions{})
	type pos struct{ round, i int }
	next := map[string]pos{}
	present := map[string]uint64{}
	for n, msg := range got {
		if n > 0 && msg.Seq <= got[n-1].Seq {
			t.Fatalf("round %d: inbox out of order at %d", round, n)
		}
		var p pos
		if _, err := fmt.Sscanf(msg.Body, "%d-%d", &p.round, &p.i); err != nil {
			t.Fatalf("round %d: body %q: %v", round, msg.Body, err)
		}
		want := next[msg.From]
		if p.round > want.round && p.i == 0 {
			want = pos{p.round, 0} // the sender's next round starts
		}
		if p != want {
			t.Fatalf("round %d: from %s found %q, want %d-%d (per-sender append order)", round, msg.From, msg.Body, want.round, want.i)
		}
		next[msg.From] = pos{p.round, p.i + 1}
		present[msg.From+" "+msg.Body] = msg.Seq
	}
	for k, seq := range acked {
		if got, ok := present[k]; !ok || got != seq {
			t.Fatalf("round %d: acknowledged %s (seq %d) lost after kill -9 (found seq %d, present %v)", round, k, seq, got, ok)
		}
	}
	t.Logf("round %d: %d acknowledged messages all present after kill -9; %d in the inbox", round, len(acked), len(got))
}

// runFloodAndKill runs TestHelperFlood on dir, SIGKILLs it after want
// acknowledgements and returns them ("sender round-i" → seq).
func runFloodAndKill(t *testing.T, dir string, round, want int) map[string]uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFlood$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashRoundEnv+"="+strconv.Itoa(round))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	acked := map[string]uint64{}
	var mu sync.Mutex
	enough := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 4 && f[0] == "ack":
				seq, err := strconv.ParseUint(f[3], 10, 64)
				if err != nil {
					done <- fmt.Errorf("bad ack %q", sc.Text())
					return
				}
				mu.Lock()
				acked[f[1]+" "+f[2]] = seq
				mu.Unlock()
				if n++; n == want {
					close(enough)
				}
			case len(f) > 0 && f[0] == "error":
				done <- fmt.Errorf("child: %s", sc.Text())
				return
			}
		}
		done <- sc.Err()
	}()
	select {
	case <-enough:
	case err := <-done:
		t.Fatalf("child stopped early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("child too slow to acknowledge mail")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	readErr := <-done // read to EOF before Wait closes the pipe
	_ = cmd.Wait()
	if readErr != nil {
		t.Fatal(readErr)
	}
	mu.Lock()
	defer mu.Unlock()
	return acked
}
