//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"

	"aicli.dev/aicli/e2e/framework"
	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/images"
	"aicli.dev/aicli/internal/egress"
	"aicli.dev/aicli/internal/gateway"
	"aicli.dev/aicli/internal/gateway/gatewaytest"
	"aicli.dev/aicli/internal/imagebuild"
)

// Default-deny egress, enforced (docs/egress.md). A fake-image guest container runs with --network none; the test
// process plays the supervisor (gateway + egress server, in-process) and hosts two loopback servers on the host,
// one allowed and one not. The client runs in the container's network namespace — the namespace the CLI runs in
// (the test enters it with setns on a locked OS thread, as guest_test's dialFromNetns does) — and uses the guest's
// loopback proxy (127.0.0.1:3128) and provider port (127.0.0.1:8780) exactly as a CLI with HTTPS_PROXY and a
// provider base URL would. Routing depends on the namespace, not on the process, so what this client reaches is
// what the CLI reaches.
var _ = Describe("Default-deny egress", Ordered, Label("egress"), func() {
	var (
		fakeImage string
		gw        *gateway.Gateway
		server    *egress.Server
		denials   *deniedLog
	)

	BeforeAll(func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		Expect(framework.BuildBinaries(ctx, suite.Root, dir, map[string]string{
			"aicli-guest":    "./cmd/aicli-guest",
			"aicli-fake-cli": "./cmd/aicli-fake-cli",
		})).To(Succeed())
		b := &imagebuild.Builder{Docker: suite.Client, Defs: images.FS, ArtifactDir: dir, Logger: suite.Logger}
		var err error
		fakeImage, err = b.Ensure(ctx, "fake", nil)
		Expect(err).NotTo(HaveOccurred())

		denials = &deniedLog{}
		server, err = egress.NewServer(egress.Options{Denied: denials.add, Logger: suite.Logger})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(server.Close)
		gw, err = gateway.New(gateway.Options{DataDir: GinkgoT().TempDir(), Tokens: gatewaytest.NewTokens(),
			Logger: suite.Logger, GuestStreams: server})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(gw.Close)
	}, NodeTimeout(5*time.Minute))

	It("reaches an allowed loopback port only through the supervisor and refuses (and reports) one that is not allowed",
		func(ctx SpecContext) {
			var allowedHits atomic.Int64
			allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				allowedHits.Add(1)
				_, _ = fmt.Fprintf(w, "allowed %s", r.URL.Path)
			}))
			DeferCleanup(allowed.Close)
			forbidden, err := net.Listen("tcp", "127.0.0.1:0")
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(forbidden.Close)
			var forbiddenHits atomic.Int64
			go func() {
				for {
					c, err := forbidden.Accept()
					if err != nil {
						return
					}
					forbiddenHits.Add(1)
					_ = c.Close()
				}
			}()
			allowedAddr := strings.TrimPrefix(allowed.URL, "http://")

			run := suite.NewRun()
			l, err := gw.Prepare(ctx, framework.NewRunID("egress"))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() error { return gw.Release(l.ConversationID) })
			policy, err := egress.NewPolicy(allowed.URL+"/provider", []string{allowedAddr})
			Expect(err).NotTo(HaveOccurred())
			server.SetPolicy(l.ConversationID, policy)
			DeferCleanup(server.RemovePolicy, l.ConversationID)

			spec := supervisedSpec(run.Spec("egress", fakeImage), l, cliHome())
			Expect(spec.Network).To(BeEmpty(), "the runtime's default network mode is none")
			id := run.Create(ctx, spec)
			Expect(suite.Runtime.Start(ctx, id)).To(Succeed())
			raw, err := suite.Runtime.InspectRaw(ctx, id)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(raw.HostConfig.NetworkMode)).To(Equal("none"))
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			_, err = gw.WaitGuest(wctx, l.ConversationID)
			Expect(err).NotTo(HaveOccurred(), "the guest never completed the handshake")
			pid := hostPID(ctx, id)

			proxied := netnsClient(pid, "http://"+egresswire.DefaultProxyAddr)
			direct := netnsClient(pid, "")

			By("an allowed host:port through the guest's forward proxy")
			Eventually(ctx, func(g Gomega) {
				body, code, err := fetch(ctx, proxied, allowed.URL+"/via-proxy")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(code).To(Equal(http.StatusOK))
				g.Expect(body).To(Equal("allowed /via-proxy"))
			}).WithTimeout(20 * time.Second).Should(Succeed())

			By("HTTPS to an allowed host:port: CONNECT through the guest, TLS end to end")
			tlsAllowed := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = fmt.Fprintf(w, "tls %s", r.URL.Path)
			}))
			DeferCleanup(tlsAllowed.Close)
			tlsPolicy, err := egress.NewPolicy(allowed.URL+"/provider", []string{allowedAddr,
				strings.TrimPrefix(tlsAllowed.URL, "https://")})
			Expect(err).NotTo(HaveOccurred())
			server.SetPolicy(l.ConversationID, tlsPolicy) // a policy change applies to the next stream
			proxiedTLS := netnsClient(pid, "http://"+egresswire.DefaultProxyAddr)
			proxiedTLS.Transport.(*http.Transport).TLSClientConfig = tlsAllowed.Client().Transport.(*http.Transport).TLSClientConfig
			body, code, err := fetch(ctx, proxiedTLS, tlsAllowed.URL+"/secure")
			Expect(err).NotTo(HaveOccurred())
			Expect(code).To(Equal(http.StatusOK))
			Expect(body).To(Equal("tls /secure"))

			By("the provider endpoint through the guest's provider port")
			body, code, err = fetch(ctx, direct, "http://"+egresswire.DefaultProviderAddr+"/v1/messages")
			Expect(err).NotTo(HaveOccurred())
			Expect(code).To(Equal(http.StatusOK))
			Expect(body).To(Equal("allowed /provider/v1/messages"))

			By("a loopback port that is not allowed: 403 from the proxy, a report, and no connection on the host")
			forbiddenURL := "http://" + forbidden.Addr().String() + "/secret"
			body, code, err = fetch(ctx, proxied, forbiddenURL)
			Expect(err).NotTo(HaveOccurred())
			Expect(code).To(Equal(http.StatusForbidden))
			Expect(body).To(ContainSubstring("port_not_allowed"))
			Eventually(denials.all).WithTimeout(10 * time.Second).Should(ContainElement(deniedEntry{
				conv: l.ConversationID, target: forbidden.Addr().String(),
				reason: fmt.Sprintf("port_not_allowed: port %d of 127.0.0.1 is not on the allow-list",
					forbidden.Addr().(*net.TCPAddr).Port)}))
			_, _, err = fetch(ctx, proxied, "https://"+forbidden.Addr().String()+"/secret") // CONNECT
			Expect(err).To(MatchError(ContainSubstring("Forbidden")))

			By("the same port dialed directly from the container: its loopback is its own, the host has no route")
			_, _, err = fetch(ctx, direct, forbiddenURL)
			Expect(err).To(MatchError(syscall.ECONNREFUSED))
			Expect(forbiddenHits.Load()).To(BeZero(), "the forbidden listener must never see a connection")
			Expect(allowedHits.Load()).To(BeNumerically(">=", 2))
			st := server.Stats()
			Expect(st.Refused).To(HaveKeyWithValue(BeEquivalentTo("port_not_allowed"), BeNumerically("==", 2)))
		}, SpecTimeout(3*time.Minute))
})

// deniedEntry is one Denied callback.
type deniedEntry struct{ conv, target, reason string }

// deniedLog collects the egress server's Denied callbacks (the supervisor turns them into conversation events).
type deniedLog struct {
	mu  sync.Mutex
	got []deniedEntry
}

func (d *deniedLog) add(conv, target, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, deniedEntry{conv, target, reason})
}

func (d *deniedLog) all() []deniedEntry {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]deniedEntry(nil), d.got...)
}

// netnsClient is an HTTP client whose every TCP connection is created inside the network namespace of host
// process pid, optionally through the forward proxy at proxyURL.
func netnsClient(pid int, proxyURL string) *http.Client {
	GinkgoHelper()
	tr := &http.Transport{DialContext: netnsDialer(pid), DisableKeepAlives: true}
	if proxyURL != "" {
		u, err := url.Parse(proxyURL)
		Expect(err).NotTo(HaveOccurred())
		tr.Proxy = http.ProxyURL(u)
	}
	return &http.Client{Transport: tr, Timeout: 15 * time.Second}
}

// netnsDialer dials on a dedicated OS thread that enters the namespace first; the socket belongs to the namespace
// it was created in, so the returned connection keeps working from any goroutine. The thread is never returned to
// the scheduler (it exits with its goroutine).
func netnsDialer(pid int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		res := make(chan result, 1)
		go func() {
			runtime.LockOSThread() // no Unlock, see above
			f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
			if err != nil {
				res <- result{err: fmt.Errorf("open netns: %w", err)}
				return
			}
			defer f.Close()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				res <- result{err: fmt.Errorf("setns: %w", err)}
				return
			}
			d := net.Dialer{Timeout: 5 * time.Second}
			c, err := d.DialContext(ctx, network, addr)
			res <- result{c, err}
		}()
		r := <-res
		return r.c, r.err
	}
}

// fetch GETs u and returns the body and status code.
func fetch(ctx context.Context, c *http.Client, u string) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode, err
}
