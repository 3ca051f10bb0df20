package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"

	"aicli.dev/aicli/guest/harness/builtin"
	"aicli.dev/aicli/guest/harness/fake"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/ptyhost"
	"aicli.dev/aicli/guest/server"
	"aicli.dev/aicli/guest/sidechannel"
	"aicli.dev/aicli/guest/toolrelay"
	"aicli.dev/aicli/guest/toolwire"
)

// Daemon runs one CLI in one of the two modes.
type Daemon struct {
	Config Config
	Log    *slog.Logger
	// Waiter is the reaper when the guest is PID 1 (nil: direct wait).
	Waiter ptyhost.Waiter
	Stdin  *os.File
	Stdout *os.File
	// Tools, when set in supervised mode, is the tool relay: the guest API's PUT /v1/capabilities fills it and the
	// CLI finds its socket in AICLI_TOOL_SOCKET.
	Tools *toolrelay.Relay
}

// newHost makes the PTY host; mirror sends the CLI's output to d.Stdout too.
func (d *Daemon) newHost(passthrough, mirror bool) (*ptyhost.Host, error) {
	reg, err := builtin.Registry(builtin.Options{Fake: fake.Options{Binary: d.Config.FakeCLI}})
	if err != nil {
		return nil, fmt.Errorf("harness registry: %w", err)
	}
	opts := ptyhost.Options{
		Registry: reg, DefaultHarness: d.Config.Harness, Home: d.Config.Home, WorkDir: d.Config.WorkDir, RunAs: d.Config.RunAs,
		PassthroughQueries: passthrough, StopGrace: d.Config.StopGrace, Waiter: d.Waiter, Logger: d.Log,
	}
	if mirror {
		opts.Mirror = d.Stdout
	}
	if d.Tools != nil {
		opts.BaseEnv = []string{"PATH=" + ptyhost.DefaultPath, "LANG=C.UTF-8", toolwire.EnvSocket + "=" + d.Tools.Addr()}
	}
	h, err := ptyhost.New(opts)
	if err != nil {
		return nil, fmt.Errorf("pty host: %w", err)
	}
	return h, nil
}

// RunTransparent launches the default harness and proxies stdio to it until
// the CLI exits (returning its exit code) or ctx ends (stopping the CLI and
// returning 0).
func (d *Daemon) RunTransparent(ctx context.Context) int {
	inTTY := term.IsTerminal(int(d.Stdin.Fd()))
	outTTY := term.IsTerminal(int(d.Stdout.Fd()))
	// A real terminal on our stdout answers the CLI's queries itself.
	h, err := d.newHost(inTTY && outTTY, true)
	if err != nil {
		d.Log.Error("transparent mode", "err", err)
		return 1
	}
	defer h.Close()
	cols, rows := ptyhost.DefaultCols, ptyhost.DefaultRows
	if outTTY {
		if c, r, err := term.GetSize(int(d.Stdout.Fd())); err == nil && c > 0 && r > 0 {
			cols, rows = c, r
		}
	}
	if _, err := h.Start(ctx, ptyapi.StartRequest{Harness: d.Config.Harness, Cols: cols, Rows: rows}); err != nil {
		d.Log.Error("start cli", "harness", d.Config.Harness, "err", err)
		return 1
	}
	if inTTY {
		old, err := term.MakeRaw(int(d.Stdin.Fd()))
		if err != nil {
			d.Log.Warn("raw mode", "err", err)
		} else {
			defer term.Restore(int(d.Stdin.Fd()), old)
		}
	}
	go func() {
		// EOF on stdin (no -i) leaves the CLI running, like a terminal nobody types in.
		_, _ = io.Copy(h, d.Stdin)
	}()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	for {
		select {
		case <-winch:
			if c, r, err := term.GetSize(int(d.Stdout.Fd())); err == nil && c > 0 && r > 0 {
				_ = h.Resize(ctx, c, r)
			}
		case <-h.Done():
			code, _ := h.ExitCode()
			_ = h.Close() // flushes the output mirror
			return code
		case <-ctx.Done():
			d.Log.Info("terminating: stopping the cli")
			if err := h.Stop(context.Background()); err != nil {
				d.Log.Error("stop cli", "err", err)
			}
			return 0
		}
	}
}

// RunSupervised serves the AiCliPty contract over the side channel; the
// supervisor starts the CLI. It returns the CLI's exit code once the CLI has
// exited by itself (0 when the supervisor stopped it), after ExitLinger; 0
// when ctx ends; and 1 when the supervisor refuses the guest.
func (d *Daemon) RunSupervised(ctx context.Context, boot sidechannel.Bootstrap) int {
	h, err := d.newHost(false, d.Config.MirrorSupervised)
	if err != nil {
		d.Log.Error("supervised mode", "err", err)
		return 1
	}
	defer h.Close()
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	var hopts []server.Option
	if d.Tools != nil {
		hopts = append(hopts, server.WithCapabilities(d.Tools))
	}
	go func() { served <- sidechannel.Serve(sctx, boot, server.NewHandler(h, d.Log, hopts...), d.Log) }()
	d.Log.Info("supervised mode", "conversation", boot.ConversationID, "socket", boot.SocketPath)
	select {
	case <-ctx.Done():
		d.Log.Info("terminating: stopping the cli")
		if err := h.Stop(context.Background()); err != nil {
			d.Log.Error("stop cli", "err", err)
		}
		return 0
	case err := <-served:
		if err == nil {
			err = errors.New("side channel ended")
		}
		d.Log.Error("side channel failed", "err", err)
		_ = h.Stop(context.Background())
		return 1
	case <-h.Done():
		code, _ := h.ExitCode()
		if h.StopRequested() {
			code = 0 // the supervisor stopped it: not a failure
		}
		d.Log.Info("cli exited; lingering for the supervisor", "exitCode", code, "linger", d.Config.ExitLinger)
		select {
		case <-time.After(d.Config.ExitLinger):
		case <-ctx.Done():
		}
		return code
	}
}
