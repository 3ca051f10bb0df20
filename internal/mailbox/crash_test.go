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

const crashDirEnv = "AICLI_MAILBOX_CRASH_DIR"

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
	say("ready\n")
	for _, from := range crashSenders {
		go func() {
			for i := 0; ; i++ {
				sent, err := m.Append(ctx, mailbox.Message{Namespace: ns, From: from, To: "bob", Body: strconv.Itoa(i)})
				if err != nil {
					say(fmt.Sprintf("error %v\n", err))
					return
				}
				say(fmt.Sprintf("ack %s %d %d\n", from, i, sent.Seq))
			}
		}()
	}
	time.Sleep(60 * time.Second) // orphan guard only
	os.Exit(3)
}

func TestKill9LosesNoAcknowledgedMail(t *testing.T) {
	dir := t.TempDir()
	acked := runFloodAndKill(t, dir, 4000) // sender → acked (body index → seq)
	s := openStore(t, dir)
	defer s.Close()
	m, err := mailbox.Open(ctxT(t), s, mailbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := inbox(t, m, "bob", mailbox.InboxOptions{})
	next := map[string]int{}
	seqOf := map[string]map[int]uint64{}
	for i, msg := range got {
		if i > 0 && msg.Seq <= got[i-1].Seq {
			t.Fatalf("inbox out of order at %d", i)
		}
		if msg.Body != strconv.Itoa(next[msg.From]) {
			t.Fatalf("from %s: found %q, want %d (per-sender append order)", msg.From, msg.Body, next[msg.From])
		}
		if seqOf[msg.From] == nil {
			seqOf[msg.From] = map[int]uint64{}
		}
		seqOf[msg.From][next[msg.From]] = msg.Seq
		next[msg.From]++
	}
	total := 0
	for from, acks := range acked {
		for i, seq := range acks {
			if got, ok := seqOf[from][i]; !ok || got != seq {
				t.Fatalf("acknowledged %s #%d (seq %d) lost after kill -9 (found seq %d, present %v)", from, i, seq, got, ok)
			}
			total++
		}
	}
	t.Logf("%d acknowledged messages all present after kill -9; %d in the inbox", total, len(got))
}

// runFloodAndKill runs TestHelperFlood on dir, SIGKILLs it after want
// acknowledgements and returns them.
func runFloodAndKill(t *testing.T, dir string, want int) map[string]map[int]uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFlood$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
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
	acked := map[string]map[int]uint64{}
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
				i, _ := strconv.Atoi(f[2])
				seq, _ := strconv.ParseUint(f[3], 10, 64)
				mu.Lock()
				if acked[f[1]] == nil {
					acked[f[1]] = map[int]uint64{}
				}
				acked[f[1]][i] = seq
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
