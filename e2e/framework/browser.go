package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// ChromiumPath is where Debian's chromium package puts its launcher (hack/ensure-chromium.sh installs it).
const ChromiumPath = "/usr/bin/chromium"

// ChromiumHint is what a launch failure tells the reader to do.
const ChromiumHint = "run hack/ensure-chromium.sh (the browser specs require Debian's chromium and fail, never skip, without it)"

// Timeouts. Every Browser call is bounded so a failing spec fails in seconds.
const (
	// DefaultActionTimeout bounds one Browser call (open, wait, click, fill, read, evaluate, screenshot).
	DefaultActionTimeout = 5 * time.Second
	// LaunchTimeout bounds starting chromium and attaching to it.
	LaunchTimeout = 30 * time.Second
	// closeTimeout bounds a graceful browser shutdown before the process is killed.
	closeTimeout = 5 * time.Second
)

// Viewport is a page size in CSS pixels; Mobile emulates a phone (touch, mobile meta viewport).
type Viewport struct {
	Width, Height int64
	Mobile        bool
}

// Viewports the consoles must work at: a laptop window and a phone.
var (
	Desktop = Viewport{Width: 1280, Height: 800}
	Phone   = Viewport{Width: 390, Height: 844, Mobile: true}
)

// Chromium is one headless chromium process with a fresh profile in a temp dir, removed on Close. Specs share it
// and each takes its own tab with NewBrowser: a tab is far cheaper than a process (e2e/README.md has the figures).
type Chromium struct {
	cancelAlloc context.CancelFunc
	root        context.Context // the first tab's context: it owns the process
	cancelRoot  context.CancelFunc
	profile     string
}

// StartChromium launches chromium at ChromiumPath: headless, --no-sandbox (the suite runs as root), a 1280×800
// window. ctx bounds the launch only; the process lives until Close.
func StartChromium(ctx context.Context) (*Chromium, error) {
	return startChromium(ctx, ChromiumPath)
}

func startChromium(ctx context.Context, path string) (*Chromium, error) {
	if _, err := exec.LookPath(path); err != nil {
		return nil, fmt.Errorf("chromium: %w: %s", err, ChromiumHint)
	}
	out := &tailBuffer{max: 8 << 10}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(int(Desktop.Width), int(Desktop.Height)),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.CombinedOutput(out),
	)
	// The process is tied to these contexts, not to ctx: it outlives the launch call.
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// chromedp's own errors join chromium's output rather than the test's stderr.
	root, cancelRoot := chromedp.NewContext(allocCtx, chromedp.WithErrorf(func(format string, args ...any) {
		fmt.Fprintf(out, "chromedp: "+format+"\n", args...)
	}))
	c := &Chromium{cancelAlloc: cancelAlloc, root: root, cancelRoot: cancelRoot}

	launched := make(chan error, 1)
	go func() { launched <- chromedp.Do(root) }() // the first Do starts the process and attaches to its first tab
	var err error
	select {
	case err = <-launched:
	case <-time.After(LaunchTimeout):
		err = fmt.Errorf("not attached within %s", LaunchTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		c.kill()
		err = fmt.Errorf("chromium: launch %s: %w: %s", path, err, ChromiumHint)
		if tail := strings.TrimSpace(out.String()); tail != "" {
			err = fmt.Errorf("%w; its last output:\n%s", err, tail)
		}
		return nil, err
	}
	if p := chromedp.FromContext(root).Browser.Process(); p != nil {
		c.profile = userDataDir(p.Pid)
	}
	return c, nil
}

// Profile is the temp profile directory chromium runs with (removed by Close).
func (c *Chromium) Profile() string { return c.profile }

// Close shuts chromium down (gracefully, then by force) and removes its profile directory.
func (c *Chromium) Close() error {
	ctx, cancel := context.WithTimeout(c.root, closeTimeout)
	defer cancel()
	err := chromedp.Cancel(ctx) // waits for the process to exit and chromedp to remove the profile
	c.kill()
	if c.profile != "" {
		if _, serr := os.Stat(c.profile); !errors.Is(serr, os.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("chromium: profile %s not removed (%v)", c.profile, serr))
		}
	}
	if err != nil {
		return fmt.Errorf("chromium: close: %w", err)
	}
	return nil
}

func (c *Chromium) kill() {
	c.cancelRoot()
	c.cancelAlloc()
}

// NewBrowser opens a tab in a new browser context (its own cookies and storage, like a private window) at the
// Desktop viewport, collecting the page's console messages.
func (c *Chromium) NewBrowser(ctx context.Context) (*Browser, error) {
	tab, cancel := chromedp.NewContext(c.root, chromedp.WithNewBrowserContext())
	b := &Browser{Timeout: DefaultActionTimeout, tab: tab, cancel: cancel, collected: make(chan struct{})}
	// Console creates the tab (it lives as long as tab, not ctx) and subscribes before any page runs.
	created := make(chan iter.Seq2[chromedp.ConsoleMessage, error], 1)
	go func() { created <- chromedp.Console(tab) }()
	select {
	case messages := <-created:
		go b.collect(messages)
	case <-time.After(b.Timeout):
		cancel()
		return nil, fmt.Errorf("chromium: new tab: not opened within %s", b.Timeout)
	case <-ctx.Done():
		cancel()
		return nil, fmt.Errorf("chromium: new tab: %w", ctx.Err())
	}
	if err := b.SetViewport(ctx, Desktop); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("chromium: new tab: %w", err)
	}
	return b, nil
}

// LaunchBrowser starts a chromium process of its own and opens one tab in it; Close stops both. Prefer one
// Chromium per suite and NewBrowser per spec: a process launch costs much more than a tab.
func LaunchBrowser(ctx context.Context) (*Browser, error) {
	c, err := StartChromium(ctx)
	if err != nil {
		return nil, err
	}
	b, err := c.NewBrowser(ctx)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	b.owned = c
	return b, nil
}

// Browser is one tab. Its methods are bounded by Timeout and by the ctx passed in, and their errors say what
// was being done. A Browser is not safe for concurrent use (one tab runs one action at a time).
type Browser struct {
	// Timeout bounds each call; DefaultActionTimeout unless changed.
	Timeout time.Duration

	tab       context.Context
	cancel    context.CancelFunc
	owned     *Chromium // closed with the tab when LaunchBrowser started it
	collected chan struct{}
	closeOnce sync.Once
	closeErr  error

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

func (b *Browser) collect(messages iter.Seq2[chromedp.ConsoleMessage, error]) {
	defer close(b.collected)
	for m, err := range messages {
		if err != nil {
			return
		}
		b.mu.Lock()
		b.console = append(b.console, m)
		b.mu.Unlock()
	}
}

// Close closes the tab and disposes of its browser context (and stops chromium when LaunchBrowser started it).
// Closing twice is harmless.
func (b *Browser) Close() error {
	b.closeOnce.Do(func() {
		b.cancel()
		<-b.collected
		if b.owned != nil {
			b.closeErr = b.owned.Close()
		}
	})
	return b.closeErr
}

// run runs actions in the tab within Timeout and ctx; what names the step in the error.
func (b *Browser) run(ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) error {
	_, err := call(ctx, b, what, func(actx context.Context) (chromedp.Void, error) {
		return chromedp.Void{}, chromedp.Do(actx, actions...)
	})
	return err
}

// detached reports whether err is an element that left the document between
// being found and being used.
func detached(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "No node with given id found") || strings.Contains(msg, "Node is detached from document") ||
		strings.Contains(msg, "Could not find node with given id")
}

// call runs f against a context bounded by the tab, b.Timeout and ctx.
func call[T any](ctx context.Context, b *Browser, what string, f func(context.Context) (T, error)) (T, error) {
	actx, cancel := context.WithTimeout(b.tab, b.Timeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	v, err := f(actx)
	// An element swapped out under the call (a live re-render, a navigation)
	// is looked up again on the new page, within the same bound.
	for err != nil && (navigated(err) || detached(err)) && actx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		v, err = f(actx)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (spec context: %w)", err, ctx.Err())
		} else if errors.Is(err, context.DeadlineExceeded) || actx.Err() != nil {
			err = fmt.Errorf("not done within %s: %w", b.Timeout, err)
		}
		return v, fmt.Errorf("browser: %s: %w", what, err)
	}
	return v, nil
}

// Open navigates to url and waits for the load event. An HTTP status of 400 or more is an error.
func (b *Browser) Open(ctx context.Context, url string) error {
	resp, err := call(ctx, b, "open "+url, func(actx context.Context) (int64, error) {
		r, err := chromedp.Run(actx, chromedp.NavigateResponse(url))
		if err != nil || r == nil {
			return 0, err
		}
		return r.Status, nil
	})
	if err != nil {
		return err
	}
	if resp >= 400 {
		text, _ := b.Text(ctx, "body")
		return fmt.Errorf("browser: open %s: HTTP %d: %s", url, resp, clip(text, 300))
	}
	return nil
}

// WaitVisible waits until the element matching the CSS selector is visible.
func (b *Browser) WaitVisible(ctx context.Context, css string) error {
	return b.run(ctx, fmt.Sprintf("wait for %q to be visible", css), chromedp.WaitVisible(chromedp.CSS(css)))
}

// WaitGone waits until no element matches the CSS selector.
func (b *Browser) WaitGone(ctx context.Context, css string) error {
	return b.run(ctx, fmt.Sprintf("wait for %q to go away", css), chromedp.WaitNotPresent(chromedp.CSS(css)))
}

// WaitText waits until the visible text of the element matching the CSS selector contains text. On timeout the
// error quotes what the element said instead.
func (b *Browser) WaitText(ctx context.Context, css, text string) error {
	_, err := call(ctx, b, fmt.Sprintf("wait for %q to contain %q", css, text), func(actx context.Context) (bool, error) {
		return chromedp.Run(actx, chromedp.PollFunction[bool](
			`(sel, want) => { const el = document.querySelector(sel); return !!el && el.innerText.includes(want); }`,
			chromedp.WithPollingArgs(css, text), chromedp.WithPollingMutation()))
	})
	if err != nil {
		short := &Browser{Timeout: time.Second, tab: b.tab}
		if got, terr := Evaluate[string](ctx, short, fmt.Sprintf(
			`(() => { const el = document.querySelector(%s); return el ? JSON.stringify(el.innerText) : "no such element"; })()`,
			strconv.Quote(css))); terr == nil {
			err = fmt.Errorf("%w; it reads %s", err, clip(got, 300))
		}
	}
	return err
}

// navigated reports whether err is the page going away under a command
// (a navigation), not the command failing.
func navigated(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Inspected target navigated or closed") || strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Cannot find context with specified id")
}

// Click clicks the element matching the CSS selector once it is visible.
func (b *Browser) Click(ctx context.Context, css string) error {
	return b.run(ctx, fmt.Sprintf("click %q", css), chromedp.Click(chromedp.CSS(css)))
}

// ClickButton clicks the button or link whose text (or aria-label, or a submit input's value) is name.
func (b *Browser) ClickButton(ctx context.Context, name string) error {
	return b.run(ctx, fmt.Sprintf("click the button %q", name), chromedp.Click(chromedp.JSPath(byName(name))))
}

// Fill replaces the value of the form field labelled label (its <label> text or aria-label) with text, typing it
// key by key as a user would, so the page's input handlers run.
func (b *Browser) Fill(ctx context.Context, label, text string) error {
	field := byLabel(label)
	return b.run(ctx, fmt.Sprintf("fill the field labelled %q", label),
		chromedp.WaitVisible(chromedp.JSPath(field)),
		chromedp.Evaluate[chromedp.Void](`(el => { el.value = ""; el.dispatchEvent(new Event("input", {bubbles: true})); })(`+field+`)`),
		chromedp.SendKeys(chromedp.JSPath(field), text))
}

// Text returns the visible text (innerText) of the element matching the CSS selector.
func (b *Browser) Text(ctx context.Context, css string) (string, error) {
	return call(ctx, b, fmt.Sprintf("read the text of %q", css), func(actx context.Context) (string, error) {
		return chromedp.Run(actx, chromedp.Text(chromedp.CSS(css)))
	})
}

// Evaluate runs a JavaScript expression in the page and decodes its result (JSON) into T; a promise is awaited.
func Evaluate[T any](ctx context.Context, b *Browser, js string) (T, error) {
	return call(ctx, b, "evaluate "+clip(js, 80), func(actx context.Context) (T, error) {
		return chromedp.Run(actx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	})
}

// SetViewport resizes the page (CSS media queries and window.innerWidth follow).
func (b *Browser) SetViewport(ctx context.Context, v Viewport) error {
	return b.run(ctx, fmt.Sprintf("set the viewport to %d×%d", v.Width, v.Height),
		chromedp.EmulateViewport(v.Width, v.Height, func(m *emulation.SetDeviceMetricsOverrideParams,
			t *emulation.SetTouchEmulationEnabledParams) {
			m.Mobile = v.Mobile
			t.Enabled = v.Mobile
		}))
}

// Screenshot returns a PNG of the whole page, beyond the viewport.
func (b *Browser) Screenshot(ctx context.Context) ([]byte, error) {
	return call(ctx, b, "take a screenshot", func(actx context.Context) ([]byte, error) {
		return chromedp.Run(actx, chromedp.FullScreenshot(100)) // quality 100 means PNG
	})
}

// URL returns the page's current address.
func (b *Browser) URL(ctx context.Context) (string, error) {
	return call(ctx, b, "read the location", func(actx context.Context) (string, error) {
		return chromedp.Run(actx, chromedp.Location())
	})
}

// Console returns every console message, uncaught exception and browser log entry of the tab so far, one per line
// ("type: text (url:line)").
func (b *Browser) Console() []string {
	return b.messages(func(chromedp.ConsoleMessage) bool { return true })
}

// ConsoleErrors returns the console.error calls, uncaught exceptions, unhandled rejections and browser errors
// (such as failed resource loads) of the tab so far. Specs assert it is empty: "no JS errors".
func (b *Browser) ConsoleErrors() []string {
	return b.messages(func(m chromedp.ConsoleMessage) bool {
		return m.Type == chromedp.ConsoleError || m.IsException()
	})
}

func (b *Browser) messages(keep func(chromedp.ConsoleMessage) bool) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.console {
		if !keep(m) {
			continue
		}
		s := m.String()
		if m.URL != "" {
			s += fmt.Sprintf(" (%s:%d)", m.URL, m.Line+1)
		}
		out = append(out, s)
	}
	return out
}

// byLabel is a JS expression for the form control labelled label: the control of a <label> whose trimmed text is
// label (by for= or nesting), or an element with that aria-label; a visible one first (a page may hide a copy).
func byLabel(label string) string {
	return pickVisible(label, `[...document.querySelectorAll("label")].filter(l => l.textContent.trim() === want && l.control)
    .map(l => l.control).concat([...document.querySelectorAll("[aria-label]")].filter(e => e.getAttribute("aria-label") === want))`)
}

// byName is a JS expression for the button or link named name (its aria-label, text or value); a visible one first.
func byName(name string) string {
	return pickVisible(name, `[...document.querySelectorAll("button, a, [role=button], input[type=submit], input[type=button]")]
    .filter(el => (el.getAttribute("aria-label") || el.innerText || el.value || "").trim() === want)`)
}

// pickVisible wraps candidates, a JS expression over want, so that it yields the first visible candidate, else the
// first, else null (chromedp retries a null JSPath until its timeout).
func pickVisible(want, candidates string) string {
	return fmt.Sprintf(`((want) => {
  const found = %s;
  return found.find(el => el.checkVisibility()) || found[0] || null;
})(%s)`, candidates, strconv.Quote(want))
}

// userDataDir reads the --user-data-dir chromium runs with from its command line.
func userDataDir(pid int) string {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
		if dir, ok := strings.CutPrefix(string(arg), "--user-data-dir="); ok {
			return dir
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// tailBuffer keeps the last max bytes written (chromium's output, for launch errors).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
