//go:build e2e

package e2e_test

import (
	"bytes"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/e2e/framework"
)

// formPage is a small app: a labelled form whose submit posts to /echo with fetch and appends the reply to a
// list without reloading; a flex layout that stacks its columns below 600px; an aria-labelled field and a hidden
// button with the same name as the form's.
const formPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>browser spec</title><link rel="icon" href="data:,">
<style>
  body { margin: 0; font-family: sans-serif; }
  .layout { display: flex; gap: 1rem; padding: 1rem; }
  .layout > * { flex: 1; min-width: 0; }
  @media (max-width: 600px) { .layout { flex-direction: column; } }
</style></head>
<body><main class="layout">
  <nav id="side"><h1>Agents</h1><input id="filter" aria-label="Filter"><div hidden><button type="button">Send</button></div></nav>
  <section>
    <form id="send"><label for="msg">Message</label> <input id="msg" name="msg"> <button type="submit">Send</button></form>
    <ul id="replies" aria-live="polite"></ul>
  </section>
</main>
<script>
  window.pageToken = Math.random(); // survives only while the document is not reloaded
  document.getElementById("send").addEventListener("submit", async (e) => {
    e.preventDefault();
    const msg = document.getElementById("msg");
    const r = await fetch("/echo", { method: "POST", body: msg.value });
    const li = document.createElement("li");
    li.textContent = await r.text();
    document.getElementById("replies").append(li);
    msg.value = "";
  });
</script></body></html>`

// brokenPage logs an error and throws.
const brokenPage = `<!doctype html><html><head><link rel="icon" href="data:,"></head><body><p>broken</p>
<script>console.error("boom from the page"); notAFunction();</script></body></html>`

var _ = Describe("Browser", Label("browser"), func() {
	var (
		srv   *httptest.Server
		loads atomic.Int32 // GETs of the form page
	)
	BeforeEach(func() {
		loads.Store(0)
		mux := http.NewServeMux()
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			loads.Add(1)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, formPage)
		})
		mux.HandleFunc("GET /broken", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, brokenPage)
		})
		mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			_, _ = fmt.Fprintf(w, "echo: %s", body)
		})
		srv = httptest.NewServer(mux) // loopback
		DeferCleanup(srv.Close)
	})

	It("types into a labelled field, clicks and sees the reply appear without a reload", func(ctx SpecContext) {
		b := suite.NewBrowser(ctx)
		Expect(b.Open(ctx, srv.URL+"/")).To(Succeed())
		token, err := framework.Evaluate[float64](ctx, b, "window.pageToken")
		Expect(err).NotTo(HaveOccurred())

		Expect(b.Fill(ctx, "Filter", "by aria-label")).To(Succeed())
		Expect(framework.Evaluate[string](ctx, b, `document.getElementById("filter").value`)).To(Equal("by aria-label"))

		Expect(b.Fill(ctx, "Message", "hello <b>world</b>")).To(Succeed())
		Expect(b.ClickButton(ctx, "Send")).To(Succeed()) // the visible one, not the hidden copy in the nav
		Expect(b.WaitText(ctx, "#replies", "echo: hello <b>world</b>")).To(Succeed())

		Expect(b.Fill(ctx, "Message", "second")).To(Succeed())
		Expect(b.Click(ctx, "#send button")).To(Succeed())
		Expect(b.WaitText(ctx, "#replies li:nth-child(2)", "echo: second")).To(Succeed())

		again, err := framework.Evaluate[float64](ctx, b, "window.pageToken")
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(token), "the page reloaded")
		Expect(loads.Load()).To(BeEquivalentTo(1))
		// Text set with textContent stays text: the markup is escaped, not parsed.
		Expect(framework.Evaluate[int](ctx, b, `document.querySelectorAll("#replies b").length`)).To(Equal(0))
		Expect(b.Text(ctx, "#replies li")).To(Equal("echo: hello <b>world</b>"))
		Expect(b.ConsoleErrors()).To(BeEmpty())
	})

	It("lays the page out for a phone width and back", func(ctx SpecContext) {
		b := suite.NewBrowser(ctx)
		Expect(b.Open(ctx, srv.URL+"/")).To(Succeed())
		type layout struct {
			Width     int    `json:"width"`
			Direction string `json:"direction"`
			Overflows bool   `json:"overflows"`
		}
		const measure = `({ width: window.innerWidth,
			direction: getComputedStyle(document.querySelector(".layout")).flexDirection,
			overflows: document.documentElement.scrollWidth > window.innerWidth })`
		Expect(framework.Evaluate[layout](ctx, b, measure)).To(Equal(layout{Width: 1280, Direction: "row"}))

		Expect(b.SetViewport(ctx, framework.Phone)).To(Succeed())
		Expect(framework.Evaluate[layout](ctx, b, measure)).To(Equal(layout{Width: 390, Direction: "column"}))
		// The form stays usable at phone width.
		Expect(b.Fill(ctx, "Message", "from a phone")).To(Succeed())
		Expect(b.ClickButton(ctx, "Send")).To(Succeed())
		Expect(b.WaitText(ctx, "#replies", "echo: from a phone")).To(Succeed())

		Expect(b.SetViewport(ctx, framework.Desktop)).To(Succeed())
		Expect(framework.Evaluate[layout](ctx, b, measure)).To(Equal(layout{Width: 1280, Direction: "row"}))
	})

	It("collects console errors and uncaught exceptions", func(ctx SpecContext) {
		b := suite.NewBrowser(ctx)
		Expect(b.Open(ctx, srv.URL+"/broken")).To(Succeed())
		Eventually(b.ConsoleErrors).WithTimeout(2 * time.Second).Should(ContainElements(
			ContainSubstring("boom from the page"), ContainSubstring("notAFunction is not defined")))
		err := b.Open(ctx, srv.URL+"/missing")
		Expect(err).To(MatchError(ContainSubstring("HTTP 404")))
	})

	It("fails a wait in about its timeout, quoting what the page shows", func(ctx SpecContext) {
		b := suite.NewBrowser(ctx)
		Expect(b.Open(ctx, srv.URL+"/")).To(Succeed())
		b.Timeout = time.Second
		start := time.Now()
		err := b.WaitText(ctx, "#side", "never there")
		Expect(err).To(MatchError(And(ContainSubstring(`"#side"`), ContainSubstring("within 1s"),
			ContainSubstring(`it reads "Agents"`))))
		Expect(time.Since(start)).To(BeNumerically("<", 3*time.Second))
		err = b.Click(ctx, "#no-such-button")
		Expect(err).To(MatchError(ContainSubstring(`click "#no-such-button"`)))
		err = b.Fill(ctx, "No such label", "x")
		Expect(err).To(MatchError(ContainSubstring(`labelled "No such label"`)))
	})

	It("saves a failed page's screenshot and console log, and README screenshots on request", func(ctx SpecContext) {
		b := suite.NewBrowser(ctx)
		Expect(b.Open(ctx, srv.URL+"/")).To(Succeed())
		dir := GinkgoT().TempDir()
		GinkgoT().Setenv(framework.EnvArtifacts, dir)
		Expect(framework.ArtifactsDir(suite.Root)).To(Equal(dir))

		// What ScreenshotOnFailure does when a spec has failed.
		path, err := framework.WriteFailureArtifacts(ctx, b, filepath.Join(dir, "run"), "page")
		Expect(err).NotTo(HaveOccurred())
		Expect(path).To(Equal(filepath.Join(dir, "run", "page.png")))
		expectPNG(path, 1280)
		log, err := os.ReadFile(filepath.Join(dir, "run", "page.console.txt"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).To(HavePrefix("page: " + srv.URL + "/\n"))

		// README screenshots are written only on request.
		readme := filepath.Join(dir, "docs", "images", "spec.png")
		GinkgoT().Setenv(framework.EnvUpdateScreenshots, "")
		Expect(framework.SaveScreenshot(ctx, b, readme)).To(BeFalse())
		Expect(readme).NotTo(BeAnExistingFile())
		GinkgoT().Setenv(framework.EnvUpdateScreenshots, "1")
		Expect(b.SetViewport(ctx, framework.Phone)).To(Succeed())
		Expect(framework.SaveScreenshot(ctx, b, readme)).To(BeTrue())
		expectPNG(readme, 390)
	})

	It("measures launching chromium against opening a tab in a running one", func(ctx SpecContext) {
		const n = 5
		timed := func(d *[]time.Duration, f func()) {
			start := time.Now()
			f()
			*d = append(*d, time.Since(start))
		}
		// A process per spec: launch, first tab, first page, close.
		var launch, firstTab, firstOpen, stop []time.Duration
		for range n {
			var c *framework.Chromium
			var b *framework.Browser
			timed(&launch, func() {
				var err error
				c, err = framework.StartChromium(ctx)
				Expect(err).NotTo(HaveOccurred())
			})
			timed(&firstTab, func() {
				var err error
				b, err = c.NewBrowser(ctx)
				Expect(err).NotTo(HaveOccurred())
			})
			timed(&firstOpen, func() { Expect(b.Open(ctx, srv.URL+"/")).To(Succeed()) })
			timed(&stop, func() {
				Expect(b.Close()).To(Succeed())
				Expect(c.Close()).To(Succeed())
			})
		}
		// A tab per spec in the suite's process: new tab (own browser context), page, close.
		c, err := suite.Chromium(ctx)
		Expect(err).NotTo(HaveOccurred())
		var tab, open, closeTab []time.Duration
		for range n {
			var b *framework.Browser
			timed(&tab, func() {
				var err error
				b, err = c.NewBrowser(ctx)
				Expect(err).NotTo(HaveOccurred())
			})
			timed(&open, func() { Expect(b.Open(ctx, srv.URL+"/")).To(Succeed()) })
			timed(&closeTab, func() { Expect(b.Close()).To(Succeed()) })
		}
		AddReportEntry("browser start, p50 of 5", fmt.Sprintf("process per spec: launch %.0f ms + tab %.0f ms + "+
			"page %.0f ms + close %.0f ms; tab per spec in a running process: tab %.0f ms + page %.0f ms + close %.0f ms",
			p50ms(launch), p50ms(firstTab), p50ms(firstOpen), p50ms(stop), p50ms(tab), p50ms(open), p50ms(closeTab)))
	})

	It("removes its temp profile on Close", func(ctx SpecContext) {
		c, err := framework.StartChromium(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Profile()).To(BeADirectory())
		Expect(c.Close()).To(Succeed())
		Expect(c.Profile()).NotTo(BeAnExistingFile())
	})
})

// expectPNG checks path holds a PNG width pixels wide.
func expectPNG(path string, width int) {
	GinkgoHelper()
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := png.DecodeConfig(bytes.NewReader(raw))
	Expect(err).NotTo(HaveOccurred(), "%s is not a PNG", path)
	Expect(cfg.Width).To(Equal(width))
	Expect(cfg.Height).To(BeNumerically(">", 0))
}
