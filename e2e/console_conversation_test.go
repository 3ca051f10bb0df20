//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/e2e/framework"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// chatConversation is the conversation a chat view shows (its transcript stream's parameter).
func chatConversation(ctx SpecContext, b *framework.Browser) string {
	GinkgoHelper()
	ws, err := framework.Evaluate[string](ctx, b, `document.querySelector("ol.transcript").dataset.transcriptWs`)
	Expect(err).NotTo(HaveOccurred())
	u, err := url.Parse(ws)
	Expect(err).NotTo(HaveOccurred())
	return u.Query().Get("conversation")
}

var _ = Describe("The conversation page and the end-user console", Label("console", "browser", "conversation"), func() {
	var (
		sup *supervisorProc
		con *consoleProc
	)
	BeforeEach(func(ctx SpecContext) {
		sup = startSpecSupervisor(ctx, GinkgoT().TempDir())
		con = startConsole(ctx, GinkgoT().TempDir(), []*supervisorProc{sup})
	}, NodeTimeout(3*time.Minute))

	It("creates an agent, talks to it live, and in the Manager shows its terminal, pauses and resumes it", func(ctx SpecContext) {
		b := con.loggedInBrowser(ctx, "/agents/new")
		b.Timeout = 2 * time.Minute // the first launch builds the fake CLI's image

		Expect(b.Fill(ctx, "Name", "chatty")).To(Succeed())
		Expect(framework.Evaluate[string](ctx, b, `document.getElementById("harness").value = "fake"`)).To(Equal("fake"))
		Expect(b.Fill(ctx, "Persona", "Answer briefly.")).To(Succeed())
		Expect(b.ClickButton(ctx, "Create and start")).To(Succeed())
		Eventually(func() (string, error) { return b.URL(ctx) }).WithTimeout(3 * time.Minute).Should(HaveSuffix("/talk/local/default/chatty"))
		Expect(b.WaitVisible(ctx, "ol.transcript")).To(Succeed())
		conv := chatConversation(ctx, b)
		Expect(conv).To(HavePrefix("chatty-"))
		// The end-user console does not say which supervisor runs the agent.
		Expect(b.Text(ctx, "main")).NotTo(ContainSubstring("local"))
		Expect(b.WaitText(ctx, "#conv-state", "IDLE")).To(Succeed())

		Expect(framework.Evaluate[bool](ctx, b, `window.pageMark = true`)).To(BeTrue())
		Expect(b.Fill(ctx, "Message to chatty", "hello console")).To(Succeed())
		Expect(b.ClickButton(ctx, "Send")).To(Succeed())
		Expect(b.WaitText(ctx, "ol.transcript", "fake[turn 1]: hello console")).To(Succeed())
		Expect(framework.Evaluate[bool](ctx, b, `window.pageMark === true`)).To(BeTrue(), "the page reloaded")
		Expect(b.Text(ctx, "ol.transcript .speaker-human")).To(ContainSubstring("hello console"))
		Expect(b.WaitText(ctx, "#send-result", "Sent.")).To(Succeed())
		// Enter sends too (Shift+Enter would start a new line).
		Expect(b.Fill(ctx, "Message to chatty", "second by enter")).To(Succeed())
		Expect(framework.Evaluate[bool](ctx, b, `document.getElementById("message").dispatchEvent(
			new KeyboardEvent("keydown", {key: "Enter", bubbles: true, cancelable: true}))`)).To(BeFalse()) // default prevented
		Expect(b.WaitText(ctx, "ol.transcript", "fake[turn 2]: second by enter")).To(Succeed())

		// At phone width the chat view fits without sideways scrolling.
		Expect(b.SetViewport(ctx, framework.Phone)).To(Succeed())
		Expect(framework.Evaluate[bool](ctx, b, `document.documentElement.scrollWidth <= window.innerWidth`)).To(BeTrue())
		Expect(b.SetViewport(ctx, framework.Desktop)).To(Succeed())

		// "My agents" lists it with its live state and a Talk link.
		Expect(b.Open(ctx, con.URL+"/")).To(Succeed())
		Expect(b.WaitText(ctx, `tr[data-agent="chatty"]`, "Active")).To(Succeed())
		Expect(b.WaitVisible(ctx, `a[aria-label="Talk to chatty"]`)).To(Succeed())

		// The Manager's conversation page: the CLI's screen in the terminal.
		Expect(b.Open(ctx, con.URL+"/manage/conversations/local/default/"+conv)).To(Succeed())
		Expect(b.WaitText(ctx, ".xterm-rows", "for shortcuts")).To(Succeed()) // the fake CLI's prompt line
		Expect(b.Text(ctx, "ol.transcript")).To(ContainSubstring("fake[turn 1]: hello console"))
		// Read-only until "Take control".
		Expect(framework.Evaluate[string](ctx, b, `document.querySelector("[data-terminal-control]").getAttribute("aria-pressed")`)).To(Equal("false"))

		Expect(b.ClickButton(ctx, "Pause")).To(Succeed())
		Expect(b.WaitVisible(ctx, `#conv-state [data-state="Paused"]`)).To(Succeed())
		Expect(b.WaitVisible(ctx, `#conv-state button`)).To(Succeed())
		Expect(b.ClickButton(ctx, "Resume")).To(Succeed())
		Expect(b.WaitVisible(ctx, `#conv-state [data-state="Active"]`)).To(Succeed())
		Expect(b.WaitText(ctx, "#conv-state", "IDLE")).To(Succeed())
		// The terminal reconnects to the resumed conversation by itself.
		Expect(b.WaitGone(ctx, "#terminal.disconnected")).To(Succeed())
		Expect(b.ConsoleErrors()).To(BeEmpty())
		sup.waitState(ctx, conv, "Active", "IDLE", time.Minute)
	})

	It("renders transcript text as text: a <script> entry shows, never runs", func(ctx SpecContext) {
		sup.apply(ctx, fakeAgent("xss"))
		conv := sup.start(ctx, "xss")
		sup.waitState(ctx, conv, "Active", "IDLE", 2*time.Minute)
		b := con.loggedInBrowser(ctx, "/talk/local/default/xss")
		Expect(framework.Evaluate[bool](ctx, b, `(window.alertCalls = 0, window.alert = () => { window.alertCalls++; }, true)`)).To(BeTrue())

		const evil = `<script>alert(1)</script>`
		Expect(b.Fill(ctx, "Message to xss", evil)).To(Succeed())
		Expect(b.ClickButton(ctx, "Send")).To(Succeed())
		Expect(b.WaitText(ctx, "ol.transcript", "fake[turn 1]: "+evil)).To(Succeed()) // live, appended as text
		Expect(b.Text(ctx, "ol.transcript .speaker-human")).To(ContainSubstring(evil))
		Expect(framework.Evaluate[int](ctx, b, `document.querySelectorAll("ol.transcript script").length`)).To(Equal(0))
		Expect(framework.Evaluate[int](ctx, b, `window.alertCalls`)).To(Equal(0))

		// Server-rendered: the page holds the escaped form, the DOM no script.
		hc, _ := con.httpSession(ctx)
		Expect(getBody(ctx, hc, con.URL+"/manage/conversations/local/default/"+conv)).To(
			And(ContainSubstring("&lt;script&gt;alert(1)&lt;/script&gt;"), Not(ContainSubstring(evil))))
		Expect(b.Open(ctx, con.URL+"/manage/conversations/local/default/"+conv)).To(Succeed())
		Expect(b.WaitText(ctx, "ol.transcript", evil)).To(Succeed())
		Expect(framework.Evaluate[int](ctx, b, `document.querySelectorAll("ol.transcript script").length`)).To(Equal(0))
	})

	It("pages a long transcript and delivers new entries to an open page fast (p50 < 300 ms)", Label("perf"), func(ctx SpecContext) {
		sup.apply(ctx, fakeAgent("chatter"))
		conv := sup.start(ctx, "chatter")
		sup.waitState(ctx, conv, "Active", "IDLE", 2*time.Minute)
		// More than one page of entries (each turn is a human and an agent entry).
		const turns = 60
		for i := 1; i <= turns; i++ {
			Expect(sup.send(ctx, conv, fmt.Sprintf("warm-up %d", i))).To(Succeed())
			sup.waitReply(ctx, conv, fmt.Sprintf("fake[turn %d]: warm-up %d", i, i))
		}
		b := con.loggedInBrowser(ctx, "/manage/conversations/local/default/"+conv)
		shown, err := framework.Evaluate[int](ctx, b, `document.querySelectorAll("ol.transcript li.entry").length`)
		Expect(err).NotTo(HaveOccurred())
		Expect(shown).To(BeNumerically("<=", 100), "the first render holds at most one page")
		total := len(sup.transcript(ctx, conv))
		Expect(total).To(BeNumerically(">", 100))
		Expect(b.ClickButton(ctx, "Load earlier")).To(Succeed())
		Eventually(func() (int, error) {
			return framework.Evaluate[int](ctx, b, `document.querySelectorAll("ol.transcript li.entry").length`)
		}).WithTimeout(10*time.Second).Should(Equal(total), "Load earlier adds the older page")
		Expect(framework.Evaluate[string](ctx, b, `document.querySelector("ol.transcript li.entry").dataset.cursor`)).To(Equal("1"))

		// Latency: an entry's commit time (its time) to the moment the page appended it.
		Expect(framework.Evaluate[bool](ctx, b, `(window.lags = [], document.addEventListener("transcript:entry", (e) => {
			window.lags.push(performance.timeOrigin + performance.now() - Date.parse(e.detail.time)); }), true)`)).To(BeTrue())
		// Same-run baseline: the supervisor's own follow stream, read directly by this process.
		var (
			direct   []float64
			directMu sync.Mutex
		)
		followCtx, stopFollow := context.WithCancel(ctx)
		followed := make(chan struct{})
		go func() {
			defer close(followed)
			_ = sup.client.FollowTranscript(followCtx, "default", conv, int64(total)+1, func(e transcriptwire.Entry) error {
				directMu.Lock()
				direct = append(direct, float64(time.Since(e.Time).Microseconds())/1000)
				directMu.Unlock()
				return nil
			}, func(error) bool { return true })
		}()
		const samples = 20
		for i := 1; i <= samples; i++ {
			Expect(sup.send(ctx, conv, fmt.Sprintf("measure %d", i))).To(Succeed())
			sup.waitReply(ctx, conv, fmt.Sprintf("fake[turn %d]: measure %d", turns+i, i))
		}
		var lags []float64
		Eventually(func() (int, error) {
			var err error
			lags, err = framework.Evaluate[[]float64](ctx, b, `window.lags`)
			return len(lags), err
		}).WithTimeout(10 * time.Second).Should(BeNumerically(">=", 2*samples))
		Eventually(func() int { directMu.Lock(); defer directMu.Unlock(); return len(direct) }).
			WithTimeout(10 * time.Second).Should(BeNumerically(">=", 2*samples))
		stopFollow()
		<-followed
		sort.Float64s(lags)
		sort.Float64s(direct)
		p50, p90, worst := lags[len(lags)/2], lags[len(lags)*9/10], lags[len(lags)-1]
		base := direct[len(direct)/2]
		report := fmt.Sprintf("transcript entry → open page: p50 %.0f ms, p90 %.0f ms, max %.0f ms over %d entries; "+
			"baseline (the supervisor's follow stream read directly, same run): p50 %.0f ms", p50, p90, worst, len(lags), base)
		AddReportEntry("transcript latency", report)
		GinkgoWriter.Println(report)
		if path := os.Getenv("AICLI_BENCH_OUT"); path != "" {
			Expect(os.WriteFile(filepath.Clean(path), []byte(report+"\n"), 0o644)).To(Succeed())
		}
		Expect(p50).To(BeNumerically("<", 300))
	})

	It("shows the end-user chat view as the README screenshot", Label("screenshot"), func(ctx SpecContext) {
		sup.apply(ctx, fakeAgent("helper"))
		conv := sup.start(ctx, "helper")
		sup.waitState(ctx, conv, "Active", "IDLE", 2*time.Minute)
		for i, text := range []string{"Summarise today's open issues, please.", "Thanks! Draft a reply to the first one."} {
			Expect(sup.send(ctx, conv, text)).To(Succeed())
			sup.waitReply(ctx, conv, fmt.Sprintf("fake[turn %d]: %s", i+1, text))
		}
		b := con.loggedInBrowser(ctx, "/talk/local/default/helper")
		Expect(b.WaitText(ctx, "ol.transcript", "Draft a reply")).To(Succeed())
		Expect(b.WaitText(ctx, "#conv-state", "IDLE")).To(Succeed())
		saved, err := framework.SaveScreenshot(ctx, b, filepath.Join("docs", "images", "console.png"))
		Expect(err).NotTo(HaveOccurred())
		if saved {
			GinkgoWriter.Println("wrote docs/images/console.png")
		}
		Expect(b.Text(ctx, "main")).NotTo(ContainSubstring("local"))
	})
})
