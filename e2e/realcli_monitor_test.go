//go:build e2e && realcli

package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/fakeprovider"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// A monitor with real CLIs on both sides: Claude Code is the target and
// Claude Code the monitor (Codex's shell tool runs commands in its own
// bubblewrap sandbox, which cannot start in a guest container with every
// capability dropped, and its adapter pre-approves no tools). A human message
// with the keyword wakes the monitor; the fake provider answers the trigger
// with a Bash tool_use running the mounted advise built-in; the advice reaches
// the worker while its CLI is IDLE, as a new user turn.
var _ = Describe("A monitor in a real CLI", Label("real-cli", "monitors"), func() {
	It("wakes Claude Code on a keyword and its advise call reaches the idle Claude Code it watches", func(ctx SpecContext) {
		const (
			model   = "claude-sonnet-4-5-20250929"
			human   = "the server panic happened again at noon"
			advice  = "check the disk before restarting"
			trigger = `[Monitor trigger: attachment "watch"]`
			// The speakers of the advice in the worker's transcript and of the trigger in the monitor's.
			byWatcher = transcriptwire.SpeakerInjectedPrefix + "watcher"
			byTrigger = transcriptwire.SpeakerTriggerPrefix + "watch"
		)
		injected := fmt.Sprintf("[Advice from monitor %q]: %s", "watcher", advice)
		provider, err := fakeprovider.Start(fakeprovider.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(provider.Close)
		var mu sync.Mutex
		var adviseAt time.Time // when the provider first handed the monitor its advise call
		provider.SetToolCall(func(r fakeprovider.Request) *fakeprovider.ToolCall {
			// Once: the request carrying advise's output (its tool_result) gets a text reply.
			if !strings.Contains(r.LastUserText(), trigger) || r.Carries("advice delivered to") {
				return nil
			}
			mu.Lock()
			if adviseAt.IsZero() {
				adviseAt = time.Now()
			}
			mu.Unlock()
			input, _ := json.Marshal(map[string]string{"command": "advise " + advice, "description": "advise the worker"})
			return &fakeprovider.ToolCall{Name: "Bash", Input: input}
		})

		dataDir := GinkgoT().TempDir()
		setSecret(ctx, dataDir, "provider-key", "sk-aicli-test-0123456789abcdefghijklmnop")
		sup := startSpecSupervisor(ctx, dataDir, "--offline-pricing")
		for _, agent := range []string{"worker", "watcher"} {
			sup.apply(ctx, fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":%q,"namespace":"default"},
				"spec":{"harness":"claude","model":%q,"provider":{"endpoint":%q,"credential":"Secret","secretName":"provider-key"}}}`,
				agent, model, provider.URL()))
		}
		sup.apply(ctx, monitorAttachment("watch", "watcher", "worker", "panic", "human"))

		work := sup.start(ctx, "worker")
		var mon string
		DeferCleanup(func(ctx SpecContext) {
			if !CurrentSpecReport().Failed() {
				return
			}
			GinkgoWriter.Printf("provider calls: %v\n", requestLog(provider, time.Time{}))
			for _, conv := range []string{work, mon} {
				if conv == "" {
					continue
				}
				screen, _ := sup.client.DoRaw(ctx, "GET", client.ResourcePath("conversations", "default", conv, "screen")+"?format=text", "", nil)
				GinkgoWriter.Printf("screen of %s:\n%s\n", conv, screen)
				for _, e := range sup.transcript(ctx, conv) {
					GinkgoWriter.Printf("transcript of %s: #%d %s: %q\n", conv, e.Cursor, e.Speaker, e.Text)
				}
			}
		})
		// A cold start builds the Debian base and Claude's image from npm.
		startToIdle(ctx, sup, work, convCLI{harness: "claude", model: model}, "", "monitor target", 15*time.Minute)

		By("a human message with the keyword; Claude answers it with text and is IDLE again")
		w := watchExecution(ctx, sup, work)
		sent := time.Now()
		Expect(sup.send(ctx, work, human)).To(Succeed())
		sup.waitReply(ctx, work, "echo: "+human)
		firstEnd := replyEnd(ctx, provider, human)
		idle := w.waitExecution(firstEnd, "IDLE", time.Minute)

		By("the monitor wakes once with the trigger and advises through Claude's Bash tool")
		mon = sup.monitorConversation(ctx, "watch", work)
		// The monitor's own container starts on the wake (its image is the worker's, already built).
		Eventually(func() []string { return bySpeaker(sup.transcript(ctx, work), byWatcher) }).
			WithTimeout(5*time.Minute).WithPolling(250*time.Millisecond).
			Should(Equal([]string{injected}), "the advice in the worker's transcript, attributed to the monitor")
		injectedAt := time.Now()
		var triggers []string
		Eventually(func() []string {
			triggers = bySpeaker(sup.transcript(ctx, mon), byTrigger)
			return triggers
		}).WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).Should(HaveLen(1),
			"the trigger in the monitor's transcript, attributed to the attachment")
		Expect(triggers[0]).To(HavePrefix(trigger))
		Expect(triggers[0]).To(ContainSubstring("Target conversation: " + work))
		Expect(triggers[0]).To(MatchRegexp(`#\d+ human: ` + human))
		Eventually(func() bool {
			for _, r := range provider.Conversations() {
				if strings.Contains(r.LastUserText(), trigger) && r.Carries("advice delivered to "+work) {
					return true
				}
			}
			return false
		}).WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(BeTrue(),
			"advise's output comes back to the monitor's model as the tool_result")
		sup.waitState(ctx, mon, "Active", "IDLE", time.Minute)

		By("the advice reached the worker while it was IDLE, as a new user turn that Claude answers")
		reply := sup.waitReply(ctx, work, "echo: "+injected)
		sup.waitState(ctx, work, "Active", "IDLE", time.Minute)
		mu.Lock()
		advised := adviseAt
		mu.Unlock()
		Expect(advised.IsZero()).To(BeFalse())
		// The worker read IDLE from the end of the human's turn until the monitor ran advise: nothing but the
		// advice made it BUSY again.
		Expect(idle.at.Before(advised)).To(BeTrue(), "worker IDLE at %s, advise handed out at %s", stamp(idle.at), stamp(advised))
		busy, ok := w.first(0, func(e execEvent) bool { return e.at.After(idle.at) && e.execution != "IDLE" })
		Expect(ok).To(BeTrue(), "the advice never made the worker BUSY: %v", w.since(0))
		Expect(busy.at.After(advised)).To(BeTrue(), "the worker was %s at %s, before advise ran at %s: %v",
			busy.execution, stamp(busy.at), stamp(advised), w.since(0))
		var turn *fakeprovider.Request
		for _, r := range provider.Conversations() {
			if strings.Contains(r.LastUserText(), injected) && len(r.JSONSchema) == 0 {
				turn = &r
				break
			}
		}
		Expect(turn).NotTo(BeNil(), "the provider never saw the advice: %v", requestLog(provider, sent))
		Expect(turn.Time.After(firstEnd)).To(BeTrue(), "the advice's request at %s, the first reply ended at %s",
			stamp(turn.Time), stamp(firstEnd))
		var roles []string
		for _, m := range turn.Messages {
			roles = append(roles, m.Role)
		}
		n := len(turn.Messages)
		Expect(n).To(BeNumerically(">=", 3), "roles %v", roles)
		Expect(turn.Messages[n-3].Text).To(ContainSubstring(human), "roles %v", roles)
		Expect(turn.Messages[n-2]).To(Equal(fakeprovider.Message{Role: "assistant", Text: "echo: " + human}), "roles %v", roles)
		Expect(turn.Messages[n-1].Role).To(Equal("user"))

		By("the attachment counts one wake and one human-less cycle")
		Consistently(func() int { return len(bySpeaker(sup.transcript(ctx, mon), byTrigger)) }).
			WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal(1))
		a := sup.attachment(ctx, "watch")
		Expect(a.Status.Wakes).To(BeEquivalentTo(1))
		Expect(a.Status.ConsecutiveHumanless).To(BeEquivalentTo(1))

		took := func(from, to time.Time) string { return to.Sub(from).Round(time.Millisecond).String() }
		GinkgoWriter.Printf("monitor: send %s, first reply ended +%s, worker IDLE +%s, advise handed out +%s, "+
			"advice seen injected +%s, advice turn at provider +%s, its reply %q\n", stamp(sent), took(sent, firstEnd),
			took(sent, idle.at), took(sent, advised), took(sent, injectedAt), took(sent, turn.Time), reply.Text)
		AddReportEntry("claude monitor: keyword sent → advise run", took(sent, advised))
		AddReportEntry("claude monitor: keyword sent → advice at the worker's provider", took(sent, turn.Time))
	}, SpecTimeout(25*time.Minute))
})
