//go:build e2e

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/harness/fake/cli"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/monitor/monitorwire"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// monitorAttachmentSpec is attachment name with its spec given whole.
func monitorAttachmentSpec(name string, spec map[string]any) string {
	b, _ := json.Marshal(map[string]any{"apiVersion": "aicli.dev/v1alpha1", "kind": "MonitorAttachment",
		"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec})
	return string(b)
}

// patchAttachment merge-patches the attachment's spec.
func (p *supervisorProc) patchAttachment(ctx context.Context, name, specJSON string) {
	GinkgoHelper()
	_, err := p.client.DoRaw(ctx, "PATCH", client.ResourcePath("monitorattachments", "default", name),
		"application/merge-patch+json", []byte(`{"spec":`+specJSON+`}`))
	Expect(err).NotTo(HaveOccurred())
}

// cursorOf waits for the entry of speaker whose text contains text in conv's transcript and returns its cursor.
func (p *supervisorProc) cursorOf(ctx context.Context, conv, speaker, text string) int64 {
	GinkgoHelper()
	var cursor int64
	Eventually(func() int64 {
		for _, e := range p.transcript(ctx, conv) {
			if e.Speaker == speaker && strings.Contains(e.Text, text) {
				cursor = e.Cursor
			}
		}
		return cursor
	}).WithTimeout(time.Minute).WithPolling(100*time.Millisecond).ShouldNot(BeZero(), "no %s entry containing %q in %s", speaker, text, conv)
	return cursor
}

// waitEvaluated waits until the attachment's loop has evaluated target's transcript up to cursor
// (the durable cursor, written at most every 500 ms): a "no wake" checked after it is not vacuous.
func (p *supervisorProc) waitEvaluated(ctx context.Context, attachment, target string, cursor int64) {
	GinkgoHelper()
	Eventually(func() int64 {
		for _, c := range p.attachment(ctx, attachment).Status.Conversations {
			if c.Target == target {
				return c.Cursor
			}
		}
		return 0
	}).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(BeNumerically(">=", cursor),
		"%s's cursor on %s", attachment, target)
}

// monitorConversationOf is the monitor conversation the attachment names for target, "" before its first wake.
func (p *supervisorProc) monitorConversationOf(ctx context.Context, attachment, target string) string {
	GinkgoHelper()
	for _, c := range p.attachment(ctx, attachment).Status.Conversations {
		if c.Target == target {
			return c.Monitor
		}
	}
	return ""
}

// conversationCondition is the status and message of conv's condition typ.
func conversationCondition(obj *unstructured.Unstructured, typ string) (string, string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["message"])
		}
	}
	return "", ""
}

var _ = Describe("Monitor faults", Label("monitors"), func() {
	It("keeps a tripped breaker through kill -9: both conversations stay paused, hits wake no one, a human "+
		"message does not reset the count, and only rearm restores waking", func(ctx SpecContext) {
		dataDir := GinkgoT().TempDir()
		sup := startSpecSupervisor(ctx, dataDir)
		sup.apply(ctx, fakeAgent("pinger"))
		sup.apply(ctx, fakeAgent("ponger"))
		sup.apply(ctx, monitorAttachment("loop", "ponger", "pinger", "ping"))
		ping := sup.start(ctx, "pinger")
		sup.waitState(ctx, ping, "Active", "IDLE", 2*time.Minute)

		By("the ping-pong trips the breaker")
		// The monitor advises the rest of the chain, the target echoes it, and the echo wakes the monitor again.
		Expect(sup.send(ctx, ping, "ping"+strings.Repeat(" "+cli.MarkRun+" advise ping", 10))).To(Succeed())
		var tripped *v1alpha1.MonitorAttachment
		Eventually(func(g Gomega) {
			tripped = sup.attachment(ctx, "loop")
			g.Expect(tripped.Status.TrippedAt).NotTo(BeNil(), "status: %+v", tripped.Status)
		}).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		pong := sup.monitorConversation(ctx, "loop", ping)
		// The trip's pauses are spec writes right after the trip's status write; kill once they are stored.
		for _, conv := range []string{ping, pong} {
			Eventually(func() string { return field(sup.conversation(ctx, conv), "spec", "desiredState") }).
				WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(Equal("Paused"))
		}
		Expect(tripped.Status.ConsecutiveHumanless).To(BeEquivalentTo(5))

		By("kill -9 and a restart on the same data dir")
		sup.kill9()
		sup = startSpecSupervisor(ctx, dataDir)
		sameTrip := func(g Gomega, a *v1alpha1.MonitorAttachment) {
			g.Expect(a.Status.TrippedAt).NotTo(BeNil())
			g.Expect(a.Status.TrippedAt.Time.Equal(tripped.Status.TrippedAt.Time)).To(BeTrue(),
				"trippedAt %v, was %v", a.Status.TrippedAt, tripped.Status.TrippedAt)
			g.Expect(a.Status.TrippedReason).To(Equal(tripped.Status.TrippedReason))
			g.Expect(a.Status.ConsecutiveHumanless).To(Equal(tripped.Status.ConsecutiveHumanless))
			c := conditionOf(a, v1alpha1.ConditionBreakerClosed)
			g.Expect(c).NotTo(BeNil())
			g.Expect(string(c.Status)).To(Equal("False"))
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonHumanlessCycles))
			g.Expect(conditionOf(a, v1alpha1.ConditionReady)).To(HaveField("Status", BeEquivalentTo("False")))
		}
		Consistently(func(g Gomega) { sameTrip(g, sup.attachment(ctx, "loop")) }).
			WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		sup.waitState(ctx, ping, "Paused", "", time.Minute)
		sup.waitState(ctx, pong, "Paused", "", time.Minute)
		triggers := len(bySpeaker(sup.transcript(ctx, pong), "trigger:loop"))

		By("a human resumes the target and sends the keyword: the loop reads it, nothing wakes or resets")
		sup.setDesired(ctx, ping, "Active")
		sup.waitState(ctx, ping, "Active", "IDLE", 2*time.Minute)
		Eventually(func() error { return sup.send(ctx, ping, "ping while tripped") }).
			WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		sup.waitReply(ctx, ping, "ping while tripped")
		// Counted only now: advice the target's guest accepted before the trip but never typed is delivered when
		// the conversation resumes (the guest's outbox, ADR 0036), ahead of the human's message. Nothing after it.
		injected := len(bySpeaker(sup.transcript(ctx, ping), "injected:ponger"))
		sup.waitEvaluated(ctx, "loop", ping, sup.cursorOf(ctx, ping, transcriptwire.SpeakerAgent, "ping while tripped"))
		Consistently(func(g Gomega) {
			sameTrip(g, sup.attachment(ctx, "loop"))
			g.Expect(bySpeaker(sup.transcript(ctx, pong), "trigger:loop")).To(HaveLen(triggers))
			g.Expect(bySpeaker(sup.transcript(ctx, ping), "injected:ponger")).To(HaveLen(injected))
			g.Expect(field(sup.conversation(ctx, pong), "spec", "desiredState")).To(Equal("Paused"))
		}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("rearm closes the breaker; the next keyword wakes the monitor, and what was read while tripped does not")
		_, err := sup.client.DoRaw(ctx, "POST", client.ResourcePath("monitorattachments", "default", "loop", monitorwire.SubRearm), "", nil)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			a := sup.attachment(ctx, "loop")
			g.Expect(a.Status.TrippedAt).To(BeNil())
			g.Expect(conditionOf(a, v1alpha1.ConditionBreakerClosed).Reason).To(Equal(v1alpha1.ReasonRearmed))
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(sup.send(ctx, ping, "ping after rearm")).To(Succeed())
		Eventually(func() []string { return bySpeaker(sup.transcript(ctx, pong), "trigger:loop")[triggers:] }).
			WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).
			Should(ContainElement(ContainSubstring("human: ping after rearm")))
		for _, t := range bySpeaker(sup.transcript(ctx, pong), "trigger:loop")[triggers:] {
			Expect(t).NotTo(ContainSubstring("while tripped"), "a re-arm replays nothing")
		}
		Expect(sup.monitorConversation(ctx, "loop", ping)).To(Equal(pong), "the wake continues the same monitor conversation")
	}, SpecTimeout(6*time.Minute))

	It("fires a Word keyword only on a whole word and a Substring one inside a longer token; "+
		"an unknown target is an unresolved reference", func(ctx SpecContext) {
		sup := startSpecSupervisor(ctx, GinkgoT().TempDir())
		for _, a := range []string{"worker", "wordy", "subby"} {
			sup.apply(ctx, fakeAgent(a))
		}
		watch := func(monitor, mode string) map[string]any {
			return map[string]any{"monitor": monitor, "target": map[string]any{"agent": "worker"},
				"trigger": map[string]any{"keywords": []any{map[string]any{"text": "dead", "mode": mode}}, "speakers": []string{"human"}}}
		}
		sup.apply(ctx, monitorAttachmentSpec("word", watch("wordy", "Word")))
		sup.apply(ctx, monitorAttachmentSpec("sub", watch("subby", "Substring")))

		By("a target agent that does not exist: ReferencesResolved=False naming spec.target.agent")
		sup.apply(ctx, monitorAttachmentSpec("ghostly", map[string]any{"monitor": "wordy", "target": map[string]any{"agent": "ghost"},
			"trigger": map[string]any{"keywords": []any{map[string]any{"text": "dead"}}}}))
		Eventually(func(g Gomega) {
			c := conditionOf(sup.attachment(ctx, "ghostly"), v1alpha1.ConditionReferencesResolved)
			g.Expect(c).NotTo(BeNil())
			g.Expect(string(c.Status)).To(Equal("False"))
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonTargetNotFound))
			g.Expect(c.Message).To(ContainSubstring(`spec.target.agent: agent "ghost"`))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

		work := sup.start(ctx, "worker")
		sup.waitState(ctx, work, "Active", "IDLE", 2*time.Minute)

		By("`deadline` wakes only the Substring monitor")
		Expect(sup.send(ctx, work, "the deadline is friday")).To(Succeed())
		cur := sup.cursorOf(ctx, work, transcriptwire.SpeakerHuman, "the deadline is friday")
		subMon := sup.monitorConversation(ctx, "sub", work)
		Eventually(func() []string { return bySpeaker(sup.transcript(ctx, subMon), "trigger:sub") }).
			WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).
			Should(ConsistOf(ContainSubstring(fmt.Sprintf("#%d human: the deadline is friday", cur))))
		sup.waitEvaluated(ctx, "word", work, cur)
		Consistently(func() string { return sup.monitorConversationOf(ctx, "word", work) }).
			WithTimeout(2*time.Second).WithPolling(200*time.Millisecond).Should(BeEmpty(), "the Word monitor woke on `deadline`")

		By("`dead.` wakes the Word monitor (and the Substring one)")
		Expect(sup.send(ctx, work, "the worker is dead.")).To(Succeed())
		cur = sup.cursorOf(ctx, work, transcriptwire.SpeakerHuman, "the worker is dead.")
		wordMon := sup.monitorConversation(ctx, "word", work)
		Eventually(func() []string { return bySpeaker(sup.transcript(ctx, wordMon), "trigger:word") }).
			WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).
			Should(ConsistOf(ContainSubstring(fmt.Sprintf("#%d human: the worker is dead.", cur))))
		Eventually(func() []string { return bySpeaker(sup.transcript(ctx, subMon), "trigger:sub") }).
			WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).
			Should(HaveExactElements(ContainSubstring("deadline"), ContainSubstring("the worker is dead.")))

		By("the missing target appears: the reference resolves")
		sup.apply(ctx, fakeAgent("ghost"))
		Eventually(func() string {
			c := conditionOf(sup.attachment(ctx, "ghostly"), v1alpha1.ConditionReferencesResolved)
			if c == nil {
				return ""
			}
			return string(c.Status)
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal("True"))
	}, SpecTimeout(5*time.Minute))

	It("withholds advise once the attachment turns WatchOnly: the monitor still wakes, nothing is injected", func(ctx SpecContext) {
		sup := startSpecSupervisor(ctx, GinkgoT().TempDir())
		sup.apply(ctx, fakeAgent("worker"))
		sup.apply(ctx, fakeAgent("adviser"))
		sup.apply(ctx, monitorAttachment("advice", "adviser", "worker", "panic", "human"))
		work := sup.start(ctx, "worker")
		sup.waitState(ctx, work, "Active", "IDLE", 2*time.Minute)

		By("in Advise mode the advice is delivered")
		Expect(sup.send(ctx, work, "panic one "+cli.MarkRun+" advise first advice")).To(Succeed())
		mon := sup.monitorConversation(ctx, "advice", work)
		sup.waitReply(ctx, mon, "run advise: exit 0: advice delivered to "+work)
		Eventually(func() []string { return bySpeaker(sup.transcript(ctx, work), "injected:adviser") }).
			WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).
			Should(Equal([]string{`[Advice from monitor "adviser"]: first advice`}))

		By("WatchOnly revokes may-inject: advise leaves the live monitor conversation's tools")
		sup.patchAttachment(ctx, "advice", `{"mode":"WatchOnly"}`)
		Eventually(func(g Gomega) {
			status, msg := conversationCondition(sup.conversation(ctx, mon), v1alpha1.ConditionToolsReady)
			g.Expect(status).To(Equal("True"))
			g.Expect(msg).To(ContainSubstring("transcript-read"))
			g.Expect(msg).NotTo(ContainSubstring("advise"))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

		By("the next hit still wakes the monitor, told it is watch-only; its advise is not there, nothing reaches the target")
		Expect(sup.send(ctx, work, "panic two "+cli.MarkRun+" advise second advice")).To(Succeed())
		Eventually(func() []string { return bySpeaker(sup.transcript(ctx, mon), "trigger:advice") }).
			WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).
			Should(HaveExactElements(ContainSubstring("panic one"),
				And(ContainSubstring("panic two"), ContainSubstring("This attachment is watch-only"), Not(ContainSubstring("Advise with:")))))
		sup.waitReply(ctx, mon, "run advise: command not found")
		Consistently(func() []string { return bySpeaker(sup.transcript(ctx, work), "injected:adviser") }).
			WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).
			Should(Equal([]string{`[Advice from monitor "adviser"]: first advice`}))
	}, SpecTimeout(5*time.Minute))
})
