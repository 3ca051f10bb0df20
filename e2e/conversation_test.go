//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

var _ = Describe("Conversations from stored definitions", Label("conversations"), func() {
	var sup *supervisorProc
	var dataDir string

	BeforeEach(func(ctx SpecContext) {
		dataDir = GinkgoT().TempDir()
		sup = startSupervisor(ctx, dataDir)
		DeferCleanup(func(ctx SpecContext) {
			if CurrentSpecReport().Failed() {
				sup.dumpLog()
			}
			sup.stop()
			sup.removeContainers(ctx)
		})
	}, NodeTimeout(3*time.Minute))

	It("starts, converses, pauses, resumes with the CLI's native resume, and archives", func(ctx SpecContext) {
		sup.apply(ctx, fakeAgent("echo"))
		conv := sup.start(ctx, "echo")
		Expect(sup.start(ctx, "echo")).To(Equal(conv), "a second start continues the live conversation")
		sup.waitState(ctx, conv, "Active", "IDLE", 2*time.Minute)

		Expect(sup.send(ctx, conv, "hello there")).To(Succeed())
		reply := sup.waitReply(ctx, conv, "fake[turn 1]: hello there")
		Expect(reply.Cursor).To(BeNumerically(">", 0))
		Expect(speakers(sup.transcript(ctx, conv))).To(ContainElement(transcriptwire.SpeakerHuman))

		sup.setDesired(ctx, conv, "Paused")
		sup.waitState(ctx, conv, "Paused", "", time.Minute)
		Expect(sup.containers(ctx)).To(BeEmpty(), "pause stops and removes the container")
		Expect(sup.send(ctx, conv, "nobody home")).To(MatchError(ContainSubstring("Paused")))

		sup.setDesired(ctx, conv, "Active")
		sup.waitState(ctx, conv, "Active", "IDLE", time.Minute)
		Expect(sup.send(ctx, conv, "again")).To(Succeed())
		sup.waitReply(ctx, conv, "fake[turn 2]: again")

		sup.setDesired(ctx, conv, "Archived")
		sup.waitState(ctx, conv, "Archived", "", time.Minute)
		Expect(sup.containers(ctx)).To(BeEmpty())
		Expect(sup.send(ctx, conv, "too late")).To(MatchError(ContainSubstring("Archived")))
		Expect(len(sup.transcript(ctx, conv))).To(BeNumerically(">=", 4), "the archived transcript stays readable")
	}, SpecTimeout(5*time.Minute))

	It("never reads IDLE right after an accepted send, and records every turn as BUSY", func(ctx SpecContext) {
		sup.apply(ctx, fakeAgent("quick"))
		conv := sup.start(ctx, "quick")
		sup.waitState(ctx, conv, "Active", "IDLE", 2*time.Minute)
		const turns = 5
		for i := 1; i <= turns; i++ {
			text := fmt.Sprintf("turn %d", i)
			Expect(sup.send(ctx, conv, text)).To(Succeed())
			Expect(field(sup.conversation(ctx, conv), "status", "execution")).NotTo(Equal("IDLE"),
				"a read right after the accepted send of %q", text)
			sup.waitReply(ctx, conv, fmt.Sprintf("fake[turn %d]: %s", i, text))
			sup.waitState(ctx, conv, "Active", "IDLE", 30*time.Second)
		}
		// The history holds an IDLE → BUSY → IDLE pair per turn, even for a
		// CLI whose turn is shorter than a reconcile.
		hist, err := sup.client.History(ctx, "conversations", "default", conv)
		Expect(err).NotTo(HaveOccurred())
		busy, last := 0, ""
		for _, ev := range hist {
			exec := field(ev.Object, "status", "execution")
			if exec == "BUSY" && last != "BUSY" {
				busy++
			}
			if exec != "" {
				last = exec
			}
		}
		Expect(busy).To(BeNumerically(">=", turns), "BUSY periods in the conversation's history")
	}, SpecTimeout(3*time.Minute))

	It("keeps a live conversation through kill -9 of the supervisor and loses no committed transcript", func(ctx SpecContext) {
		sup.apply(ctx, fakeAgent("survivor"))
		conv := sup.start(ctx, "survivor")
		sup.waitState(ctx, conv, "Active", "IDLE", 2*time.Minute)
		Expect(sup.send(ctx, conv, "before the crash")).To(Succeed())
		sup.waitReply(ctx, conv, "fake[turn 1]: before the crash")
		before := sup.transcript(ctx, conv)

		sup.kill9()
		sup = startSupervisor(ctx, dataDir)

		after := sup.transcript(ctx, conv)
		Expect(len(after)).To(BeNumerically(">=", len(before)))
		for i, e := range before {
			Expect(after[i]).To(Equal(e), "committed transcript entry %d survives", i)
		}
		// Re-adopted (live) or an unplanned pause: either way resumable, never orphaned.
		Eventually(func() string {
			return field(sup.conversation(ctx, conv), "status", "state")
		}).WithTimeout(time.Minute).Should(Or(Equal("Active"), Equal("Paused")))
		if field(sup.conversation(ctx, conv), "spec", "desiredState") == "Paused" {
			sup.setDesired(ctx, conv, "Active")
		}
		sup.waitState(ctx, conv, "Active", "IDLE", time.Minute)
		// The status read right after the restart can still be the one written
		// before the kill: the guest re-dials within the adoption window.
		Eventually(func() error { return sup.send(ctx, conv, "after the crash") }).
			WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(sup.containers(ctx)).To(HaveLen(1), "exactly the conversation's container, no orphan")
		sup.waitReply(ctx, conv, "fake[turn 2]: after the crash")
	}, SpecTimeout(5*time.Minute))

	It("ends Paused when dockerd restarts under a live conversation, and resumes", Serial, Label("dockerd-restart"), func(ctx SpecContext) {
		sup.apply(ctx, fakeAgent("weather"))
		conv := sup.start(ctx, "weather")
		sup.waitState(ctx, conv, "Active", "IDLE", 2*time.Minute)
		Expect(sup.send(ctx, conv, "storm coming")).To(Succeed())
		sup.waitReply(ctx, conv, "fake[turn 1]: storm coming")

		restartDockerd(ctx)

		sup.waitState(ctx, conv, "Paused", "", 2*time.Minute)
		sup.setDesired(ctx, conv, "Active")
		sup.waitState(ctx, conv, "Active", "IDLE", 2*time.Minute)
		Expect(sup.send(ctx, conv, "sunshine")).To(Succeed())
		sup.waitReply(ctx, conv, "fake[turn 2]: sunshine")
	}, SpecTimeout(6*time.Minute))
})

func speakers(entries []transcriptwire.Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Speaker)
	}
	return out
}

// restartDockerd stops the Docker engine with SIGTERM (its containers die with
// it: no live-restore here) and starts it again with hack/ensure-docker.sh.
func restartDockerd(ctx context.Context) {
	GinkgoHelper()
	raw, err := os.ReadFile("/var/run/docker.pid")
	Expect(err).NotTo(HaveOccurred(), "dockerd pid file")
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	Expect(err).NotTo(HaveOccurred())
	Expect(syscall.Kill(pid, syscall.SIGTERM)).To(Succeed())
	Eventually(func() error { return syscall.Kill(pid, 0) }).WithTimeout(time.Minute).WithPolling(100*time.Millisecond).
		ShouldNot(Succeed(), "dockerd did not exit")
	cmd := exec.CommandContext(ctx, filepath.Join(suite.Root, "hack", "ensure-docker.sh"))
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "restarting dockerd: %s", out)
}
