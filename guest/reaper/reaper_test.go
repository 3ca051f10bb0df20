package reaper

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const helperEnv = "REAPER_TEST_HELPER"

// TestMain lets the test binary act as a PID-1-like subreaper in a child
// process, so reaping every child never disturbs the go test process itself.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helper())
	}
	os.Exit(m.Run())
}

// helper starts a shell through the reaper that orphans a short-lived
// grandchild and exits 7, then reports the exit code and whether any zombie
// children remain.
func helper() int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Println("subreaper:", err)
		return 1
	}
	r := New(nil)
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", "(sleep 0.2 &) ; exit 7")
	wait, err := r.Start(cmd)
	if err != nil {
		fmt.Println("start:", err)
		return 1
	}
	ws, err := wait()
	if err != nil {
		fmt.Println("wait:", err)
		return 1
	}
	// Immediate exits race the registration: start several that exit at once.
	for i := 0; i < 20; i++ {
		w, err := r.Start(exec.Command("/bin/true"))
		if err != nil {
			fmt.Println("start true:", err)
			return 1
		}
		if s, _ := w(); s.ExitStatus() != 0 {
			fmt.Println("true exited", s.ExitStatus())
			return 1
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := children()
		if n == 0 && r.Reaped() >= 22 {
			break
		}
		if time.Now().After(deadline) {
			fmt.Printf("children left: %d, reaped %d\n", n, r.Reaped())
			return 1
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Printf("exit=%d reaped=%d\n", ws.ExitStatus(), r.Reaped())
	return 0
}

// children counts processes (zombies included) whose parent is this process.
func children() int {
	self := strconv.Itoa(os.Getpid())
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == self {
			n++
		}
	}
	return n
}

func TestReapsOrphansAndDeliversExitStatus(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper failed: %v\n%s", err, out)
	}
	// The helper waits until it reaped the shell, the orphaned sleep and 20 trues (22).
	if !strings.Contains(string(out), "exit=7 ") {
		t.Fatalf("helper output %q: want the CLI's exit status 7", out)
	}
}
