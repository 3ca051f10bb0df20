//go:build e2e

package e2e_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/e2e/framework"
	"aicli.dev/aicli/guest/harness/fake/cli"
	"aicli.dev/aicli/internal/layout"
)

// consoleBin builds aicli-console (with its front-end bundle) once per suite run.
func consoleBin(ctx context.Context) string {
	GinkgoHelper()
	dir := supervisorBins(ctx)
	bin := filepath.Join(dir, "aicli-console")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	build := exec.CommandContext(ctx, filepath.Join(suite.Root, "hack", "build-console-web.sh"))
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "hack/build-console-web.sh: %s", out)
	Expect(framework.BuildBinaries(ctx, suite.Root, dir, map[string]string{"aicli-console": "./cmd/aicli-console"})).To(Succeed())
	return bin
}

// consoleProc is a real aicli-console process.
type consoleProc struct {
	URL      string
	Password string
	DataDir  string
	cmd      *exec.Cmd
	log      *os.File
}

// consolePassword is the password the suite's consoles are started with.
const consolePassword = "e2e-console-password"

// startConsole runs aicli-console on a free loopback port over the given
// supervisors (NAME=unix://… entries are built from their data dirs, named
// by names[i] or "local"), and stops it when the spec ends.
func startConsole(ctx context.Context, dataDir string, sups []*supervisorProc, names ...string) *consoleProc {
	GinkgoHelper()
	bin := consoleBin(ctx)
	Expect(os.MkdirAll(dataDir, 0o700)).To(Succeed())
	pwFile := filepath.Join(dataDir, "password")
	Expect(os.WriteFile(pwFile, []byte(consolePassword), 0o600)).To(Succeed())
	var entries []string
	for i, s := range sups {
		name := "local"
		if i < len(names) {
			name = names[i]
		}
		entries = append(entries, name+"=unix://"+layout.Dir(s.dataDir).Socket())
	}
	logFile, err := os.OpenFile(filepath.Join(dataDir, "console.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(bin, "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--password-file", pwFile,
		"--supervisor", strings.Join(entries, ","), "--log-format", "text")
	stderr, err := cmd.StderrPipe()
	Expect(err).NotTo(HaveOccurred())
	cmd.Stdout = logFile
	Expect(cmd.Start()).To(Succeed())
	p := &consoleProc{Password: consolePassword, DataDir: dataDir, cmd: cmd, log: logFile}
	urls := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`serving (http://[^/ ]+)/`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			_, _ = io.WriteString(logFile, line+"\n")
			if m := re.FindStringSubmatch(line); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case p.URL = <-urls:
	case <-time.After(30 * time.Second):
		Fail("aicli-console did not print its URL within 30s; log: " + p.logTail())
	}
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Printf("--- console log (tail) ---\n%s\n", p.logTail())
		}
		p.stop()
	})
	return p
}

func (p *consoleProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _, _ = p.cmd.Process.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.log.Close()
}

func (p *consoleProc) logTail() string {
	data, _ := os.ReadFile(filepath.Join(p.DataDir, "console.log"))
	lines := strings.Split(string(data), "\n")
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	return strings.Join(lines, "\n")
}

// httpSession logs in over plain HTTP (no browser) and returns a client
// holding the session cookie and the page's CSRF token.
func (p *consoleProc) httpSession(ctx context.Context) (*http.Client, string) {
	GinkgoHelper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	body := getBody(ctx, hc, p.URL+"/login")
	tok := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindStringSubmatch(body)
	Expect(tok).NotTo(BeNil(), "login page without a form token: %s", body)
	resp, err := hc.PostForm(p.URL+"/login", url.Values{"_csrf": {tok[1]}, "password": {p.Password}, "next": {"/manage"}})
	Expect(err).NotTo(HaveOccurred())
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK), "after login: %s", page)
	csrf := regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)"`).FindStringSubmatch(string(page))
	Expect(csrf).NotTo(BeNil())
	return hc, csrf[1]
}

func getBody(ctx context.Context, hc *http.Client, u string) string {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := hc.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

var _ = Describe("The console's own state", Label("console"), func() {
	It("is thin: deleting its state file loses no agent, conversation, transcript or mail, and the login needs the password", func(ctx SpecContext) {
		sup := startSpecSupervisor(ctx, GinkgoT().TempDir())
		sup.apply(ctx, mailAgent("writer", "keeper"))
		sup.apply(ctx, mailAgent("keeper"))
		conv := sup.start(ctx, "writer")
		sup.waitState(ctx, conv, "Active", "IDLE", 2*time.Minute)
		Expect(sup.send(ctx, conv, "note "+cli.MarkRun+" mail-send keeper remember the milk")).To(Succeed())
		sup.waitReply(ctx, conv, "run mail-send: exit 0: sent to keeper")
		dir := GinkgoT().TempDir()
		con := startConsole(ctx, dir, []*supervisorProc{sup})

		jar, _ := cookiejar.New(nil)
		anon := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := anon.Get(con.URL + "/manage")
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusSeeOther), "an anonymous page request goes to the login page")
		Expect(resp.Header.Get("Location")).To(HavePrefix("/login"))

		// What the consoles show comes from the supervisor: the agents with keeper's unread mail,
		// the conversation and its transcript.
		shows := func(hc *http.Client) {
			GinkgoHelper()
			home := getBody(ctx, hc, con.URL+"/")
			Expect(home).To(ContainSubstring("writer"))
			Expect(home).To(MatchRegexp(`(?s)data-agent="keeper".*1 unread`))
			page := getBody(ctx, hc, con.URL+"/manage/conversations/local/default/"+conv)
			Expect(page).To(ContainSubstring("run mail-send: exit 0: sent to keeper"))
		}
		hc, csrf := con.httpSession(ctx)
		shows(hc)
		// A state-changing request without the CSRF token is refused.
		resp, err = hc.PostForm(con.URL+"/logout", url.Values{})
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
		resp, err = hc.PostForm(con.URL+"/logout", url.Values{"_csrf": {csrf}})
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK)) // followed to the login page

		// The state file holds only a password hash and the supervisor list.
		raw, err := os.ReadFile(filepath.Join(dir, "console.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(ContainSubstring(`"passwordHash": "$2`))
		Expect(string(raw)).NotTo(ContainSubstring(consolePassword))
		for _, word := range []string{"writer", "keeper", conv, "milk"} {
			Expect(string(raw)).NotTo(ContainSubstring(word))
		}

		con.stop()
		Expect(os.Remove(filepath.Join(dir, "console.json"))).To(Succeed())
		con = startConsole(ctx, dir, []*supervisorProc{sup})
		hc, _ = con.httpSession(ctx)
		shows(hc)
	})
})

// loggedInBrowser opens a tab of the suite's chromium (a screenshot is saved
// if the spec fails) logged in to the console, at next.
func (p *consoleProc) loggedInBrowser(ctx context.Context, next string) *framework.Browser {
	GinkgoHelper()
	b := suite.NewBrowser(ctx)
	p.login(ctx, b, next)
	return b
}

// login opens the console's login page in b, logs in and lands on next.
func (p *consoleProc) login(ctx context.Context, b *framework.Browser, next string) {
	GinkgoHelper()
	Expect(b.Open(ctx, p.URL+"/login?next="+url.QueryEscape(next))).To(Succeed())
	Expect(b.Fill(ctx, "Console password", p.Password)).To(Succeed())
	Expect(b.ClickButton(ctx, "Log in")).To(Succeed())
	Expect(b.WaitVisible(ctx, "main h1")).To(Succeed())
	Eventually(func() string { u, _ := b.URL(ctx); return u }).WithTimeout(5 * time.Second).Should(HaveSuffix(next))
}

var _ = Describe("The consoles in a browser", Label("console", "browser"), func() {
	It("log in, and every page is readable at desktop and phone width without script errors", func(ctx SpecContext) {
		sup := startSpecSupervisor(ctx, GinkgoT().TempDir())
		sup.apply(ctx, fakeAgent("keeper"))
		con := startConsole(ctx, GinkgoT().TempDir(), []*supervisorProc{sup})
		b := suite.NewBrowser(ctx)

		// A wrong password is said so, on the page.
		Expect(b.Open(ctx, con.URL+"/manage")).To(Succeed())
		Expect(b.Fill(ctx, "Console password", "not-the-password")).To(Succeed())
		Expect(b.ClickButton(ctx, "Log in")).To(Succeed())
		Expect(b.WaitText(ctx, ".error", "Wrong password")).To(Succeed())
		Expect(b.ConsoleErrors()).To(ConsistOf(ContainSubstring("401 (Unauthorized)")), "the refused login is a 401, and nothing else failed")
		seen := len(b.ConsoleErrors())

		con.login(ctx, b, "/manage")
		for _, page := range consolePages {
			for _, v := range []framework.Viewport{framework.Desktop, framework.Phone} {
				Expect(b.SetViewport(ctx, v)).To(Succeed())
				Expect(b.Open(ctx, con.URL+page)).To(Succeed(), "page %s", page)
				Expect(b.WaitVisible(ctx, "main h1")).To(Succeed(), "page %s", page)
				w, err := framework.Evaluate[int](ctx, b, "document.documentElement.scrollWidth")
				Expect(err).NotTo(HaveOccurred())
				Expect(int64(w)).To(BeNumerically("<=", v.Width+1), "page %s overflows %d px", page, v.Width)
				unlabelled, err := framework.Evaluate[[]string](ctx, b, `[...document.querySelectorAll("input:not([type=hidden]),select,textarea")]
					.filter(e => !(e.labels && e.labels.length) && !e.getAttribute("aria-label")).map(e => e.name || e.id)`)
				Expect(err).NotTo(HaveOccurred())
				Expect(unlabelled).To(BeEmpty(), "page %s has inputs without a label", page)
			}
		}
		Expect(b.ConsoleErrors()[seen:]).To(BeEmpty())

		// An API error is a readable message in the page, never a blank page.
		err := b.Open(ctx, con.URL+"/manage/describe/local/agents/default/ghost")
		Expect(err).To(MatchError(ContainSubstring("HTTP 404")))
		Expect(b.Text(ctx, "main .error")).To(MatchRegexp(`(?i)agents.*"ghost" not found`))

		// Logging out ends the session: the next page asks for the password again.
		Expect(b.Open(ctx, con.URL+"/manage")).To(Succeed())
		Expect(b.ClickButton(ctx, "Log out")).To(Succeed())
		Expect(b.WaitVisible(ctx, "#password")).To(Succeed())
	})
})

// consolePages are the pages every console must render readably (each
// page's own spec tests what it does).
var consolePages = []string{"/", "/manage", "/manage/status", "/manage/monitors", "/manage/monitors/new", "/manage/spend",
	"/agents/new", "/settings", "/talk/local/default/keeper"}
