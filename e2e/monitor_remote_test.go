//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/harness/fake/cli"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/secrets/secretwire"
)

// freeLoopbackPort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freeLoopbackPort() int {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// mintToken creates a bearer token of the supervisor on dataDir bound to
// namespace, whose holder may advise as monitors (the supervisor's own
// command; it loads it when it starts).
func mintToken(ctx context.Context, dataDir, holder, namespace string, monitors ...string) string {
	GinkgoHelper()
	var out, errOut bytes.Buffer
	args := []string{"token", "create", "--data-dir", dataDir, "--name", holder, "--namespace", namespace}
	for _, m := range monitors {
		args = append(args, "--monitor", m)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(supervisorBins(ctx), "aicli-supervisor"), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	Expect(cmd.Run()).To(Succeed(), errOut.String())
	return strings.TrimSpace(out.String())
}

// putSecret stores a supervisor-held Secret through the API.
func (p *supervisorProc) putSecret(ctx context.Context, name string, value []byte) {
	GinkgoHelper()
	_, err := p.client.DoRaw(ctx, "PUT", client.ResourcePath(secretwire.Plural, "default", name), secretwire.ContentType, value)
	Expect(err).NotTo(HaveOccurred())
}

// remoteMonitorAttachment is attachment name on this side: monitor watches
// target's conversations on the supervisor at address for keyword said by a human.
func remoteMonitorAttachment(name, monitor, target, address, keyword string) string {
	b, _ := json.Marshal(map[string]any{"apiVersion": "aicli.dev/v1alpha1", "kind": "MonitorAttachment",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{"monitor": monitor,
			"target": map[string]any{"agent": target, "supervisor": map[string]any{
				"address": address, "tokenSecret": "peer-token", "caSecret": "peer-ca"}},
			"trigger": map[string]any{"keywords": []any{map[string]any{"text": keyword}}, "speakers": []string{"human"}}}})
	return string(b)
}

var _ = Describe("Cross-supervisor monitors", Label("monitors"), func() {
	It("watch an agent on another supervisor through its public API, and resume from the cursor after an outage", func(ctx SpecContext) {
		dirA, dirB := GinkgoT().TempDir(), GinkgoT().TempDir()
		listenA := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort())
		listenB := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort())
		addrA, addrB := "https://"+listenA, "https://"+listenB
		// Each side's token for the other, bound to namespace default and minted for the other side's monitor
		// (without --monitor the advice would be refused: 403); loaded when the supervisor starts.
		tokenOfA := mintToken(ctx, dirA, "supervisor-b", "default", "watcher-b")
		tokenOfB := mintToken(ctx, dirB, "supervisor-a", "default", "watcher-a")
		supA := startSpecSupervisor(ctx, dirA, "--listen", listenA)
		supB := startSpecSupervisor(ctx, dirB, "--listen", listenB)
		caA, err := os.ReadFile(filepath.Join(layout.Dir(dirA).TLS(), "server.crt"))
		Expect(err).NotTo(HaveOccurred())
		caB, err := os.ReadFile(filepath.Join(layout.Dir(dirB).TLS(), "server.crt"))
		Expect(err).NotTo(HaveOccurred())
		supA.putSecret(ctx, "peer-token", []byte(tokenOfB))
		supA.putSecret(ctx, "peer-ca", caB)
		supB.putSecret(ctx, "peer-token", []byte(tokenOfA))
		supB.putSecret(ctx, "peer-ca", caA)

		By("one monitor on each side, watching an agent on the other")
		for _, s := range []*supervisorProc{supA, supB} {
			s.apply(ctx, fakeAgent("worker"))
		}
		supA.apply(ctx, fakeAgent("watcher-a"))
		supB.apply(ctx, fakeAgent("watcher-b"))
		supA.apply(ctx, remoteMonitorAttachment("watch-b", "watcher-a", "worker", addrB, "panic"))
		supB.apply(ctx, remoteMonitorAttachment("watch-a", "watcher-b", "worker", addrA, "panic"))
		workB := supB.start(ctx, "worker")
		workA := supA.start(ctx, "worker")
		supB.waitState(ctx, workB, "Active", "IDLE", 2*time.Minute)
		supA.waitState(ctx, workA, "Active", "IDLE", 2*time.Minute)
		for _, c := range []struct {
			s    *supervisorProc
			name string
		}{{supA, "watch-b"}, {supB, "watch-a"}} {
			Eventually(func(g Gomega) {
				a := c.s.attachment(ctx, c.name)
				g.Expect(conditionOf(a, v1alpha1.ConditionReady)).NotTo(BeNil())
				g.Expect(string(conditionOf(a, v1alpha1.ConditionReady).Status)).To(Equal("True"), "%v", a.Status.Conditions)
				g.Expect(string(conditionOf(a, v1alpha1.ConditionTargetReachable).Status)).To(Equal("True"))
			}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		}

		By("a human keyword message on B wakes A's monitor once; its advice lands in B's target, prefixed and attributed")
		Expect(supB.send(ctx, workB, "the server panic "+cli.MarkRun+" advise restart the worker")).To(Succeed())
		monA := supA.monitorConversation(ctx, "watch-b", workB)
		Eventually(func() []string { return bySpeaker(supB.transcript(ctx, workB), "injected:watcher-a") }).
			WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).
			Should(Equal([]string{`[Advice from monitor "watcher-a"]: restart the worker`}))
		supA.waitReply(ctx, monA, "run advise: exit 0: advice delivered to "+workB)
		trigger := bySpeaker(supA.transcript(ctx, monA), "trigger:watch-b")
		Expect(trigger).To(HaveLen(1))
		Expect(trigger[0]).To(ContainSubstring("Target conversation: " + workB + ` (agent "worker" on supervisor ` + addrB + ")"))
		Expect(trigger[0]).To(MatchRegexp(`#\d+ human: the server panic`))

		By("and vice versa: a keyword message on A wakes B's monitor, whose advice lands in A's target")
		Expect(supA.send(ctx, workA, "a kernel panic "+cli.MarkRun+" advise check dmesg")).To(Succeed())
		monB := supB.monitorConversation(ctx, "watch-a", workA)
		Eventually(func() []string { return bySpeaker(supA.transcript(ctx, workA), "injected:watcher-b") }).
			WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).
			Should(Equal([]string{`[Advice from monitor "watcher-b"]: check dmesg`}))
		Expect(bySpeaker(supB.transcript(ctx, monB), "trigger:watch-a")).To(HaveLen(1))

		By("B goes down: A's attachment reports TargetReachable=False naming B's address")
		supB.stop()
		Eventually(func(g Gomega) {
			a := supA.attachment(ctx, "watch-b")
			c := conditionOf(a, v1alpha1.ConditionTargetReachable)
			g.Expect(c).NotTo(BeNil())
			g.Expect(string(c.Status)).To(Equal("False"))
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonTargetUnreachable))
			g.Expect(c.Message).To(ContainSubstring(addrB))
			g.Expect(conditionOf(a, v1alpha1.ConditionReady).Message).To(ContainSubstring(addrB))
		}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())

		By("B comes back on the same data dir and port: the follow resumes from the cursor")
		supB = startSpecSupervisor(ctx, dirB, "--listen", listenB)
		Eventually(func() string {
			return field(supB.conversation(ctx, workB), "status", "state")
		}).WithTimeout(time.Minute).Should(Or(Equal("Active"), Equal("Paused")))
		if field(supB.conversation(ctx, workB), "spec", "desiredState") == "Paused" {
			supB.setDesired(ctx, workB, "Active")
		}
		supB.waitState(ctx, workB, "Active", "IDLE", 2*time.Minute)
		Eventually(func() string {
			return string(conditionOf(supA.attachment(ctx, "watch-b"), v1alpha1.ConditionTargetReachable).Status)
		}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Equal("True"))
		// The monitor reads more of the remote target with transcript-read (through A's remote side).
		Eventually(func() error {
			return supB.send(ctx, workB, "another panic "+cli.MarkRun+" transcript-read "+workB+" --from 1 --limit 1")
		}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		reply := supA.waitReply(ctx, monA, "run transcript-read: exit 0:")
		Expect(reply.Text).To(ContainSubstring("human: the server panic"))
		Consistently(func() int { return len(bySpeaker(supA.transcript(ctx, monA), "trigger:watch-b")) }).
			WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal(2))
		triggers := bySpeaker(supA.transcript(ctx, monA), "trigger:watch-b")
		Expect(triggers[1]).To(ContainSubstring("another panic"))
		Expect(triggers[1]).NotTo(ContainSubstring("the server panic"), "the hit before the outage fired again")
		a := supA.attachment(ctx, "watch-b")
		Expect(a.Status.Wakes).To(BeEquivalentTo(2))
		Expect(bySpeaker(supB.transcript(ctx, workB), "injected:watcher-a")).To(HaveLen(1))
	}, SpecTimeout(12*time.Minute))
})
