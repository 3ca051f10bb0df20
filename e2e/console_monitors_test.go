//go:build e2e

package e2e_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/e2e/framework"
	"aicli.dev/aicli/guest/harness/fake/cli"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/spend/spendtest"
)

// waitPage waits until the page a click navigated to shows text in css (a
// wait that began before the navigation ended is retried).
func waitPage(ctx context.Context, b *framework.Browser, css, text string) {
	GinkgoHelper()
	Eventually(func() error { return b.WaitText(ctx, css, text) }).
		WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}

var _ = Describe("The Manager's monitors and spend", Label("console", "browser", "monitors"), func() {
	It("attaches a monitor with one form, shows its advice, the tripped breaker at the top of the page, and re-arms it", func(ctx SpecContext) {
		sup := startSpecSupervisor(ctx, GinkgoT().TempDir())
		sup.apply(ctx, fakeAgent("pinger"))
		ping := sup.start(ctx, "pinger")
		sup.waitState(ctx, ping, "Active", "IDLE", 2*time.Minute)
		con := startConsole(ctx, GinkgoT().TempDir(), []*supervisorProc{sup})
		b := con.loggedInBrowser(ctx, "/manage")

		By("the one form, reached from the target, is filled in from it")
		Expect(b.Open(ctx, con.URL+"/manage/monitors/new?target=local/default/pinger")).To(Succeed())
		harness, err := framework.Evaluate[string](ctx, b, `document.getElementById("harness").value`)
		Expect(err).NotTo(HaveOccurred())
		Expect(harness).To(Equal("fake"))
		maxH, err := framework.Evaluate[string](ctx, b, `document.getElementById("maxHumanless").value`)
		Expect(err).NotTo(HaveOccurred())
		Expect(maxH).To(Equal("5"))

		By("an empty keyword is refused next to the field")
		Expect(b.Fill(ctx, "Monitor name", "ponger")).To(Succeed())
		Expect(b.Fill(ctx, "Keywords (comma-separated)", "ping, ,")).To(Succeed())
		Expect(b.ClickButton(ctx, "Attach monitor")).To(Succeed())
		waitPage(ctx, b, "#keywords-error", "empty keyword")

		By("one submit creates the monitor agent and its attachment")
		Expect(b.Fill(ctx, "Keywords (comma-separated)", "ping")).To(Succeed())
		Expect(b.ClickButton(ctx, "Attach monitor")).To(Succeed())
		waitPage(ctx, b, "#ma-local-default-ponger", "ponger")
		// The row may be swapped by a live refresh while it is read: read it again then.
		Eventually(func() (string, error) { return b.Text(ctx, "#ma-local-default-ponger") }).WithTimeout(10 * time.Second).
			Should(And(ContainSubstring("pinger"), ContainSubstring("Closed"), ContainSubstring("0/5 cycles without a human")))
		a := sup.attachment(ctx, "ponger")
		Expect(a.Spec.Monitor).To(Equal("ponger"))
		Expect(a.Spec.Target.Agent).To(Equal("pinger"))

		By("the monitor's advice reaches the target's transcript")
		// Each advice carries the rest of the chain and the target's echo of it wakes the monitor again (e2e/monitor_test.go).
		Expect(sup.send(ctx, ping, "ping"+strings.Repeat(" "+cli.MarkRun+" advise ping", 10))).To(Succeed())
		Eventually(func() []string { return bySpeaker(sup.transcript(ctx, ping), "injected:ponger") }).
			WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).ShouldNot(BeEmpty())
		Expect(bySpeaker(sup.transcript(ctx, ping), "injected:ponger")[0]).To(HavePrefix(`[Advice from monitor "ponger"]: ping`))

		By("after the scripted loop the tripped breaker shows at the top of the open page, without a reload")
		b.Timeout = 3 * time.Minute
		Expect(b.WaitText(ctx, "#alerts", "Breaker tripped")).To(Succeed())
		b.Timeout = framework.DefaultActionTimeout
		Expect(b.Text(ctx, "#alerts")).To(And(ContainSubstring("ponger"), ContainSubstring("Re-arm ponger")))
		Expect(b.WaitText(ctx, "#ma-local-default-ponger", "Tripped")).To(Succeed())
		_, err = framework.SaveScreenshot(ctx, b, "docs/images/manager.png") // README: the Manager (AICLI_UPDATE_SCREENSHOTS=1)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Open(ctx, con.URL+"/manage")).To(Succeed())
		waitPage(ctx, b, "#alerts", "Breaker tripped")

		By("re-arming from the banner closes the breaker and the banner goes")
		Expect(b.ClickButton(ctx, "Re-arm ponger")).To(Succeed())
		Expect(b.WaitGone(ctx, "#alerts .tripped")).To(Succeed())
		Eventually(func() bool { return sup.attachment(ctx, "ponger").Status.TrippedAt == nil }).
			WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(BeTrue())
		// The refused form answered 422 on purpose; nothing else may fail.
		Expect(b.ConsoleErrors()).To(HaveEach(ContainSubstring("status of 422 (Unprocessable Entity) (" + con.URL + "/manage/monitors:")))
	})

	It("charts known spend per day by bucket and by model, with the quota windows", func(ctx SpecContext) {
		sup := startSpecSupervisor(ctx, GinkgoT().TempDir())
		// The spend fixture: session files in an agent's home, as the CLIs write them.
		home := layout.Dir(sup.dataDir).AgentHome("default", "spender")
		now := time.Now().UTC()
		Expect(spendtest.WriteClaude(home, "fixture",
			spendtest.Claude{At: now.AddDate(0, 0, -1), Model: "claude-sonnet-4-5-20250929", Input: 1200, CacheRead: 30000, CacheWrite: 800, Output: 900},
			spendtest.Claude{At: now, Model: "claude-haiku-4-5-20251001", Input: 300, CacheRead: 5000, CacheWrite: 100, Output: 400},
		)).To(Succeed())
		Expect(spendtest.WriteCodexQuota(home, "quota", spendtest.CodexQuota{At: now, PrimaryPercent: 37.5, WeeklyPercent: 8})).To(Succeed())
		con := startConsole(ctx, GinkgoT().TempDir(), []*supervisorProc{sup})
		b := con.loggedInBrowser(ctx, "/manage/spend?days=14")

		Expect(b.WaitVisible(ctx, "#chart-buckets canvas")).To(Succeed())
		Expect(b.WaitVisible(ctx, "#chart-models canvas")).To(Succeed())
		legend, err := b.Text(ctx, "#chart-buckets")
		Expect(err).NotTo(HaveOccurred())
		for _, bucket := range []string{"uncached input", "cache read", "cache write", "output"} {
			Expect(legend).To(ContainSubstring(bucket))
		}
		models, err := b.Text(ctx, "#chart-models")
		Expect(err).NotTo(HaveOccurred())
		Expect(models).To(And(ContainSubstring("claude-sonnet-4-5-20250929"), ContainSubstring("claude-haiku-4-5-20251001")))
		// The per-supervisor row: 1500 uncached input, 35000 cache read, 900 cache write, 1300 output.
		Expect(b.Text(ctx, ".spend-table tbody")).To(And(ContainSubstring("1500"), ContainSubstring("35000"), ContainSubstring("38700")))
		Expect(b.Text(ctx, ".quota-table")).To(And(ContainSubstring("default/spender"), ContainSubstring("37.5%")))

		By("at phone width the page does not scroll sideways")
		Expect(b.SetViewport(ctx, framework.Phone)).To(Succeed())
		width, err := framework.Evaluate[int](ctx, b, "document.documentElement.scrollWidth")
		Expect(err).NotTo(HaveOccurred())
		Expect(width).To(BeNumerically("<=", 390))
		Expect(b.ConsoleErrors()).To(BeEmpty())
	})
})
