// Command aicli-guest is the guest daemon, PID 1 of every conversation
// container. Without a bootstrap environment it is a transparent stdio proxy
// around the image's default harness CLI; with one it dials the supervisor's
// side channel, serves the AiCliPty contract there, and serves the loopback
// egress listeners (guest/egress) and the tool relay (guest/toolrelay) whose
// traffic leaves only through it.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"golang.org/x/sys/unix"

	"aicli.dev/aicli/guest/daemon"
	"aicli.dev/aicli/guest/egress"
	"aicli.dev/aicli/guest/reaper"
	"aicli.dev/aicli/guest/sidechannel"
	"aicli.dev/aicli/guest/toolrelay"
)

// gcPercent is the guest's GOGC unless the environment sets one. The
// guest's live heap is about 1 MiB, and at the default of 100 the runtime
// lets the heap reach 4 MiB before its first collection (the floor scales
// with GOGC), a quarter of the guest's 15 MiB memory budget; at 50 the peak
// RSS after output bursts drops by about 1.4 MiB for a few more
// sub-millisecond collections.
const gcPercent = 50

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(run())
}

func run() int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// The CLI runs as another user; a non-dumpable guest also keeps
	// /proc/<guest>/{environ,mem} closed to anything without CAP_SYS_PTRACE.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		log.Error("prctl(PR_SET_DUMPABLE, 0)", "err", err)
		return 1
	}
	// Reads the bootstrap and removes the launch token from our environment.
	boot, supervised, err := sidechannel.BootstrapFromEnv()
	if err != nil {
		log.Error("bootstrap environment", "err", err)
		return 2
	}
	cfg, err := daemon.ConfigFromEnv()
	if err != nil {
		log.Error("configuration", "err", err)
		return 2
	}
	d := &daemon.Daemon{Config: cfg, Log: log, Stdin: os.Stdin, Stdout: os.Stdout}
	if os.Getpid() == 1 {
		r := reaper.New(log)
		defer r.Close()
		d.Waiter = r
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if supervised {
		boot.Outbound = &sidechannel.Outbound{}
		if os.Getenv(egress.EnvEgress) != "off" {
			startEgress(ctx, boot.Outbound, log)
		}
		if cfg.ToolSocket != "" {
			d.Tools = startTools(ctx, cfg.ToolSocket, boot.Outbound, log)
		}
		return d.RunSupervised(ctx, boot)
	}
	return d.RunTransparent(ctx)
}

// startTools serves the tool relay, whose calls leave the container only as side-channel streams to the
// supervisor. A listen failure is logged and the CLI gets no tools (nil).
func startTools(ctx context.Context, socket string, out *sidechannel.Outbound, log *slog.Logger) *toolrelay.Relay {
	r, err := toolrelay.Listen(toolrelay.Options{Streams: out, Socket: socket, Logger: log})
	if err != nil {
		log.Error("tool relay", "err", err)
		return nil
	}
	log.Info("tool relay listening", "socket", r.Addr())
	go func() { _ = r.Serve(ctx) }()
	return r
}

// startEgress serves the loopback provider port and forward proxy, whose connections leave the container only as
// side-channel streams to the supervisor. A listen failure is logged and egress stays closed (fail closed).
func startEgress(ctx context.Context, out *sidechannel.Outbound, log *slog.Logger) {
	p, err := egress.Listen(egress.Options{Streams: out, Logger: log})
	if err != nil {
		log.Error("egress listeners", "err", err)
		return
	}
	log.Info("egress listening", "provider", p.ProviderAddr().String(), "proxy", p.ProxyAddr().String())
	go func() { _ = p.Serve(ctx) }()
}
