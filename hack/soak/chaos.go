package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dockerclient "github.com/docker/docker/client"

	"aicli.dev/aicli/internal/runtime"
)

// Fault kinds.
const (
	faultSupervisor = "supervisor-kill9"    // SIGKILL of the supervisor, restarted on the same data dir
	faultGuest      = "guest-kill9"         // SIGKILL from the host of one container's PID 1, the aicli-guest
	faultKill       = "container-kill"      // docker kill of one conversation container
	faultRemove     = "container-rm"        // docker rm -f of one conversation container
	faultDockerd    = "dockerd-restart"     // dockerd stopped and started again (once per run)
	dockerPIDFile   = "/var/run/docker.pid" // where dockerd writes its PID (hack/ensure-docker.sh starts it)
)

var faultKinds = []string{faultSupervisor, faultGuest, faultKill, faultRemove, faultDockerd}

// chaos injects faults at random moments. Container faults pick one of the supervisor's containers (found by its
// aicli.dev/supervisor label), so nothing else on the engine is touched.
type chaos struct {
	sup          *supervisor
	docker       *dockerclient.Client
	ensureDocker string // hack/ensure-docker.sh
	log          *slog.Logger
	rng          *rand.Rand

	mu sync.Mutex
	// counts are the faults injected, by kind.
	counts map[string]int
	// byConv counts the container faults that hit each conversation.
	byConv map[string]int
	// global counts the faults that hit every conversation at once (supervisor kills, dockerd restarts).
	global int
}

func newChaos(sup *supervisor, docker *dockerclient.Client, ensureDocker string, log *slog.Logger) *chaos {
	return &chaos{sup: sup, docker: docker, ensureDocker: ensureDocker, log: log,
		rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7)), counts: map[string]int{}, byConv: map[string]int{}}
}

// run injects one fault of kinds (a shuffled round-robin, so every kind occurs) every period on average, and the
// dockerd restart once, dockerdAfter into the run, when dockerdAfter > 0. It returns when ctx ends; a fault in
// progress completes (a killed supervisor is restarted).
func (ch *chaos) run(ctx context.Context, period time.Duration, kinds []string, dockerdAfter time.Duration) {
	var dockerd <-chan time.Time
	if dockerdAfter > 0 {
		t := time.NewTimer(dockerdAfter)
		defer t.Stop()
		dockerd = t.C
	}
	var queue []string
	for {
		wait := time.Duration((0.5 + ch.rng.Float64()) * float64(period))
		select {
		case <-ctx.Done():
			return
		case <-dockerd:
			dockerd = nil
			ch.inject(faultDockerd)
			continue
		case <-time.After(wait):
		}
		if len(kinds) == 0 {
			continue
		}
		if len(queue) == 0 {
			queue = append(queue, kinds...)
			ch.rng.Shuffle(len(queue), func(i, j int) { queue[i], queue[j] = queue[j], queue[i] })
		}
		kind := queue[0]
		queue = queue[1:]
		ch.inject(kind)
	}
}

// inject runs one fault and counts it when it took effect.
func (ch *chaos) inject(kind string) {
	// A fault is never cut short: the supervisor it kills is always restarted.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var target string
	var err error
	switch kind {
	case faultSupervisor:
		err = ch.killSupervisor(ctx)
	case faultDockerd:
		err = ch.restartDockerd(ctx)
	default:
		target, err = ch.containerFault(ctx, kind)
	}
	if err != nil {
		ch.log.Info("fault not injected", "kind", kind, "err", err)
		return
	}
	ch.log.Info("fault injected", "kind", kind, "conversation", target)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.counts[kind]++
	if target != "" {
		ch.byConv[target]++
	} else {
		ch.global++
	}
}

func (ch *chaos) killSupervisor(ctx context.Context) error {
	if err := ch.sup.kill9(); err != nil {
		return err
	}
	time.Sleep(time.Duration(ch.rng.IntN(1500)) * time.Millisecond)
	return ch.sup.start(ctx)
}

// containerFault applies kind to one running container of the supervisor, chosen at random, and returns its
// conversation.
func (ch *chaos) containerFault(ctx context.Context, kind string) (string, error) {
	list, err := ch.docker.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", runtime.LabelSupervisor+"="+ch.sup.supervisorID()), filters.Arg("status", "running"))})
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", errors.New("no running container")
	}
	c := list[ch.rng.IntN(len(list))]
	conv := c.Labels[runtime.LabelConversation]
	switch kind {
	case faultKill:
		return conv, ch.docker.ContainerKill(ctx, c.ID, "KILL")
	case faultRemove:
		return conv, ch.docker.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	case faultGuest:
		info, err := ch.docker.ContainerInspect(ctx, c.ID)
		if err != nil {
			return "", err
		}
		if info.State == nil || info.State.Pid == 0 {
			return "", errors.New("container has no PID 1")
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", info.State.Pid))
		if err != nil || strings.TrimSpace(string(comm)) != "aicli-guest" {
			return "", fmt.Errorf("PID %d is not aicli-guest (%q, %v)", info.State.Pid, strings.TrimSpace(string(comm)), err)
		}
		return conv, syscall.Kill(info.State.Pid, syscall.SIGKILL)
	}
	return "", fmt.Errorf("unknown fault %q", kind)
}

// restartDockerd stops the engine (SIGTERM; its containers die with it, there is no live-restore here) and starts
// it again the way hack/ensure-docker.sh does, then waits until it answers.
func (ch *chaos) restartDockerd(ctx context.Context) error {
	data, err := os.ReadFile(dockerPIDFile)
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return fmt.Errorf("%s: %w", dockerPIDFile, err)
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil || strings.TrimSpace(string(comm)) != "dockerd" {
		return fmt.Errorf("PID %d from %s is not dockerd", pid, dockerPIDFile)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dockerd (PID %d) did not stop within 60s", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, err := exec.CommandContext(ctx, ch.ensureDocker).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", ch.ensureDocker, err, out)
	}
	for {
		if _, err := ch.docker.Ping(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// faultsHitting is how many injected faults could have cut conv's run: its own container faults plus every
// supervisor kill and dockerd restart.
func (ch *chaos) faultsHitting(conv string) int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.byConv[conv] + ch.global
}

func (ch *chaos) snapshot() map[string]int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	out := map[string]int{}
	for k, v := range ch.counts {
		out[k] = v
	}
	return out
}
