package imagebuild

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// DefaultDebootstrap is the debootstrap command when Debootstrap.Command is empty.
const DefaultDebootstrap = "debootstrap"

// Debootstrap is the RootfsMaker that runs Debian's debootstrap into a temporary directory, removes the
// definition's strip paths and streams the tree as a tar (GNU tar, numeric owners). It needs root.
type Debootstrap struct {
	// Mirror is the Debian mirror URL; empty means debootstrap's own default.
	Mirror string
	// Command is the debootstrap executable; empty means DefaultDebootstrap (looked up in PATH, then /usr/sbin).
	Command string
	// TempDir is where the root filesystem is made; empty means os.TempDir(). It must allow device nodes and
	// executables (not nodev/noexec).
	TempDir string
}

// errTail is how many output lines a failed debootstrap's error quotes.
const errTail = 15

// MakeRootfs implements RootfsMaker.
func (d *Debootstrap) MakeRootfs(ctx context.Context, def BaseDef, progress func(string)) (io.ReadCloser, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("debootstrap needs root (the supervisor runs as root)")
	}
	cmdPath, err := d.command()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(d.TempDir, "aicli-rootfs-")
	if err != nil {
		return nil, fmt.Errorf("debootstrap: %w", err)
	}
	root := filepath.Join(tmp, "rootfs")
	cleanup := func() error { return removeTree(tmp) }

	args := []string{"--variant=" + def.Variant}
	if len(def.Include) > 0 {
		args = append(args, "--include="+strings.Join(def.Include, ","))
	}
	args = append(args, def.Suite, root)
	if d.Mirror != "" {
		args = append(args, d.Mirror)
	}
	if err := runLines(ctx, exec.Command(cmdPath, args...), progress); err != nil {
		return nil, errors.Join(fmt.Errorf("debootstrap %s: %w", strings.Join(args, " "), err), cleanup())
	}
	removed, err := stripTree(root, def.Strip)
	if err != nil {
		return nil, errors.Join(err, cleanup())
	}
	progress(fmt.Sprintf("stripped %d paths (%s)", removed, strings.Join(def.Strip, " ")))

	// tar needs no ctx: the consumer's failure closes the stream, and tar ends on the broken pipe.
	tarCmd := exec.Command("tar", "--numeric-owner", "--xattrs", "-C", root, "-cf", "-", ".")
	out, err := tarCmd.StdoutPipe()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("tar: %w", err), cleanup())
	}
	var stderr strings.Builder
	tarCmd.Stderr = &stderr
	if err := tarCmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("tar: %w", err), cleanup())
	}
	return &tarStream{r: out, cmd: tarCmd, stderr: &stderr, cleanup: cleanup}, nil
}

func (d *Debootstrap) command() (string, error) {
	name := d.Command
	if name == "" {
		name = DefaultDebootstrap
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if !strings.Contains(name, "/") {
		// root's PATH usually has /usr/sbin, a service's may not.
		if p := filepath.Join("/usr/sbin", name); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found: install Debian's debootstrap (hack/ensure-docker.sh does)", name)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// runLines runs cmd (in its own process group, killed when ctx ends), forwarding each output line to progress; a
// failure quotes the last lines.
func runLines(ctx context.Context, cmd *exec.Cmd, progress func(string)) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return err
	}
	pw.Close()
	pgid := cmd.Process.Pid
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	defer stop()
	var tail []string
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		progress(line)
		tail = append(tail, line)
		if len(tail) > errTail {
			tail = tail[1:]
		}
	}
	pr.Close()
	err = cmd.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("%w; last output:\n%s", err, strings.Join(tail, "\n"))
	}
	return nil
}

// stripTree removes every path under root matching one of patterns (relative globs). It refuses to follow a
// match outside root.
func stripTree(root string, patterns []string) (int, error) {
	n := 0
	for _, p := range patterns {
		matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return n, fmt.Errorf("strip %s: %w", p, err)
		}
		for _, m := range matches {
			rel, err := filepath.Rel(root, m)
			if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
				return n, fmt.Errorf("strip %s: %s is outside the root filesystem", p, m)
			}
			if err := os.RemoveAll(m); err != nil {
				return n, fmt.Errorf("strip %s: %w", p, err)
			}
			n++
		}
	}
	return n, nil
}

// removeTree removes dir after detaching any mount left under it (a killed debootstrap can leave /proc or /sys
// mounted inside the target), so removal never reaches into a mounted host filesystem.
func removeTree(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	// Deepest first.
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	for _, m := range mounts {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("remove %s: unmount %s: %w (left in place)", dir, m, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// mountsUnder lists the mount points at or below dir (from /proc/self/mountinfo).
func mountsUnder(dir string) ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for space, …).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range []byte(s[i+1 : i+4]) {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + (c - '0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// tarStream is the tar output of a made root filesystem; Close waits for tar and removes the tree.
type tarStream struct {
	r       io.ReadCloser
	cmd     *exec.Cmd
	stderr  *strings.Builder
	cleanup func() error

	once sync.Once
	err  error
}

func (t *tarStream) Read(p []byte) (int, error) { return t.r.Read(p) }

// Close implements io.Closer; it is safe to call more than once and returns the same result.
func (t *tarStream) Close() error {
	t.once.Do(func() {
		// After a full read tar has exited 0; an earlier Close (the consumer failed, and reports that) ends tar
		// on a broken pipe.
		_ = t.r.Close()
		werr := t.cmd.Wait()
		if werr != nil {
			werr = fmt.Errorf("tar: %w: %s", werr, strings.TrimSpace(t.stderr.String()))
		}
		t.err = errors.Join(werr, t.cleanup())
	})
	return t.err
}
