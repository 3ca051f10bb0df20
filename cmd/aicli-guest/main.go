// Command aicli-guest is the guest daemon, PID 1 of every conversation
// container. Without a bootstrap environment it is a transparent stdio proxy
// around the image's default harness CLI; with one it dials the supervisor's
// side channel and serves the AiCliPty contract there.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"aicli.dev/aicli/guest/daemon"
	"aicli.dev/aicli/guest/reaper"
	"aicli.dev/aicli/guest/sidechannel"
)

func main() {
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
		return d.RunSupervised(ctx, boot)
	}
	return d.RunTransparent(ctx)
}
