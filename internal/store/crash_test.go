package store_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"aicli.dev/aicli/internal/store"
)

const (
	crashDirEnv   = "AICLI_STORE_CRASH_DIR"
	crashRoundEnv = "AICLI_STORE_CRASH_ROUND"
)

// TestHelperProcess is the child of TestKill9LosesNoAcknowledgedWrite. It
// does nothing unless started by that test.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		return
	}
	round := os.Getenv(crashRoundEnv)
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		fmt.Fprintf(os.Stdout, "error %v\n", err)
		os.Exit(2)
	}
	var outMu sync.Mutex
	say := func(line string) {
		outMu.Lock()
		defer outMu.Unlock()
		_, _ = os.Stdout.WriteString(line)
	}
	say("ready\n")
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				name := fmt.Sprintf("r%s-w%02d-%d", round, w, n)
				obj, err := s.Create(ctx, res, agent("crash", name, map[string]interface{}{"v": int64(0)}))
				if err != nil {
					say(fmt.Sprintf("error %v\n", err))
					return
				}
				say(fmt.Sprintf("ack %s %s\n", name, obj.GetResourceVersion()))
				for v := 1; v <= 2; v++ {
					obj.Object["spec"] = map[string]interface{}{"v": int64(v)}
					if obj, err = s.Update(ctx, res, obj); err != nil {
						say(fmt.Sprintf("error %v\n", err))
						return
					}
					say(fmt.Sprintf("ack %s %s\n", name, obj.GetResourceVersion()))
				}
			}
		}()
	}
	go func() { time.Sleep(60 * time.Second); os.Exit(3) }() // orphan guard only
	wg.Wait()
	os.Exit(4)
}

func TestKill9LosesNoAcknowledgedWrite(t *testing.T) {
	dir := t.TempDir()
	for round := range 3 {
		acks, maxRV := runAndKill(t, dir, round)
		s, err := store.Open(dir, store.Options{})
		if err != nil {
			t.Fatalf("round %d: reopen after kill -9: %v", round, err)
		}
		for name, rv := range acks {
			obj, err := s.Get(ctxT(t), res, "crash", name)
			if err != nil {
				t.Fatalf("round %d: acknowledged %s@%d lost: %v", round, name, rv, err)
			}
			got, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
			if got < rv {
				t.Fatalf("round %d: %s has rv %d, acknowledged %d", round, name, got, rv)
			}
		}
		if s.CurrentRV() < maxRV {
			t.Fatalf("round %d: store rv %d below acknowledged %d", round, s.CurrentRV(), maxRV)
		}
		t.Logf("round %d: %d objects acknowledged (max rv %d), store rv %d after reopen", round, len(acks), maxRV, s.CurrentRV())
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// runAndKill runs the helper child on dir, collects acknowledgements for a
// while, SIGKILLs it and returns name → highest acknowledged rv.
func runAndKill(t *testing.T, dir string, round int) (map[string]uint64, uint64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashRoundEnv+"="+strconv.Itoa(round))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
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
	acks := map[string]uint64{}
	var maxRV uint64
	var mu sync.Mutex
	ready := make(chan struct{})
	enough := make(chan struct{})
	readDone := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 1 && f[0] == "ready":
				close(ready)
			case len(f) == 3 && f[0] == "ack":
				rv, err := strconv.ParseUint(f[2], 10, 64)
				if err != nil {
					readDone <- fmt.Errorf("bad ack %q", sc.Text())
					return
				}
				mu.Lock()
				acks[f[1]] = max(acks[f[1]], rv)
				maxRV = max(maxRV, rv)
				mu.Unlock()
				if n++; n == 3000+round*1500 {
					close(enough)
				}
			case len(f) > 0 && f[0] == "error":
				readDone <- fmt.Errorf("child: %s", sc.Text())
				return
			}
		}
		readDone <- sc.Err()
	}()
	select {
	case <-ready:
	case err := <-readDone:
		t.Fatalf("child ended before ready: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("child not ready within 10s")
	}
	// While the child runs, the directory is locked against this process.
	if _, err := store.Open(dir, store.Options{}); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("open while child holds the dir: %v", err)
	}
	select {
	case <-enough:
	case err := <-readDone:
		t.Fatalf("child stopped early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("child too slow to acknowledge writes")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	// Read to EOF before Wait, which closes the pipe.
	readErr := <-readDone
	_ = cmd.Wait()
	if readErr != nil {
		t.Fatal(readErr)
	}
	mu.Lock()
	defer mu.Unlock()
	return acks, maxRV
}
