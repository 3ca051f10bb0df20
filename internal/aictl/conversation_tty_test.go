package aictl

import (
	"context"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/convapi/convapitest"
)

// aictl attach on a real terminal (a PTY pair): raw mode while attached, the
// window size sent at start and on SIGWINCH, Ctrl-] detaches, and the
// terminal's mode is restored afterwards.
func TestAttachCommandRealTerminal(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)
	fake := env.Live(t, "default", "c1")

	master, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	t.Cleanup(func() { _ = master.Close(); _ = tty.Close() })
	if err := pty.Setsize(master, &pty.Winsize{Cols: 101, Rows: 31}); err != nil {
		t.Fatal(err)
	}
	before, err := term.GetState(int(tty.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	var screen syncBuffer
	go func() { _, _ = io.Copy(&screen, master) }()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"--server", env.URL, "attach", "c1"}, IOStreams{In: tty, Out: tty, ErrOut: &errOut})
	}()

	eventually(t, "the initial window size reached the PTY", func() bool {
		r := fake.Resizes()
		return len(r) > 0 && r[0] == [2]int{101, 31}
	})
	eventually(t, "the terminal is raw while attached", func() bool {
		raw, err := isRaw(tty)
		return err == nil && raw
	})
	eventually(t, "the repaint reached the terminal", func() bool { return strings.Contains(screen.String(), "? for shortcuts") })

	if err := pty.Setsize(master, &pty.Winsize{Cols: 140, Rows: 45}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "SIGWINCH forwarded the new size", func() bool {
		_ = syscall.Kill(os.Getpid(), syscall.SIGWINCH)
		r := fake.Resizes()
		return r[len(r)-1] == [2]int{140, 45}
	})

	// In raw mode Ctrl-C is a byte for the CLI, not a signal for aictl.
	if _, err := master.Write([]byte("hi\x03")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "keystrokes reached the PTY", func() bool { return fake.Keystrokes() == "hi\x03" })
	if _, err := master.Write([]byte{0x1d}); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("attach exit %d: %s", code, errOut.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Ctrl-] did not detach")
	}
	raw, err := isRaw(tty)
	if err != nil || raw {
		t.Errorf("terminal still raw after detach (%v)", err)
	}
	after, err := term.GetState(int(tty.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if *before != *after {
		t.Errorf("terminal state not restored: before %+v after %+v", *before, *after)
	}
}

// isRaw reports whether the terminal has echo and canonical mode off.
func isRaw(f *os.File) (bool, error) {
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		return false, err
	}
	return tio.Lflag&(syscall.ECHO|syscall.ICANON) == 0, nil
}
