package tools

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
)

// execWaitDelay bounds how long a call waits for its output pipes after the backend exits (a background child
// holding them open) or is killed.
const execWaitDelay = time.Second

// execEnvBase is an exec backend's environment besides HOME, TMPDIR and its secrets: the supervisor's own is never
// inherited.
var execEnvBase = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}

// execEnv is the backend's environment: the base, its temp dir as HOME and TMPDIR, each env secretRef.
func execEnv(auth *Authorization, dir string) ([]string, error) {
	env := append(append([]string(nil), execEnvBase...), "HOME="+dir, "TMPDIR="+dir)
	for _, ref := range auth.Tool.SecretRefs {
		if ref.Env == "" {
			continue
		}
		v, ok := auth.Secrets[ref.Name]
		if !ok {
			return nil, fmt.Errorf("secret %q is not resolved", ref.Name)
		}
		env = append(env, ref.Env+"="+string(v))
	}
	return env, nil
}

// runExec runs an exec backend in its own process group and a fresh temp dir; ctx ending kills the whole group.
// It returns the exit code (128+signal when killed by one); err means it could not start.
func runExec(ctx context.Context, b *v1alpha1.ExecBackend, auth *Authorization, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	dir, err := os.MkdirTemp("", "aicli-tool-")
	if err != nil {
		return -1, fmt.Errorf("temp dir: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	env, err := execEnv(auth, dir)
	if err != nil {
		return -1, err
	}
	cmd := exec.CommandContext(ctx, b.Command, append(append([]string(nil), b.Args...), auth.Args...)...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = execWaitDelay
	in, err := cmd.StdinPipe()
	if err != nil {
		return -1, err
	}
	if err := cmd.Start(); err != nil {
		return -1, err
	}
	go func() {
		_, _ = io.Copy(in, stdin)
		_ = in.Close()
	}()
	werr := cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what the backend left running in its group
	ps := cmd.ProcessState
	if ps == nil {
		return -1, werr
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ps.ExitCode(), nil
}
