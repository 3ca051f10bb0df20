//go:build e2e

package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/guest/harness/fake/cli"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// mailAgent is a fake agent with a peer policy (so it holds the mail tools).
func mailAgent(name string, sendTo ...string) string {
	peers := map[string]any{}
	if len(sendTo) > 0 {
		peers["sendTo"] = map[string]any{"agents": sendTo}
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "aicli.dev/v1alpha1", "kind": "Agent",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{"harness": "fake", "peers": peers,
			"env": []any{map[string]any{"name": "AICLI_FAKE_DELAY", "value": "50ms"}}}})
	return string(b)
}

var _ = Describe("Mail and recall", Label("mail"), func() {
	It("delivers granted mail as backlog and live, refuses ungranted peers, and remembers", func(ctx SpecContext) {
		sup := startSpecSupervisor(ctx, GinkgoT().TempDir())
		sup.apply(ctx, mailAgent("a", "b")) // only a → b is granted
		sup.apply(ctx, mailAgent("b"))
		sup.apply(ctx, `{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"b-memory","namespace":"default"},
			"spec":{"subject":"b","recall":[{"name":"notes","access":"ReadWrite"}]}}`)

		By("A's conversation mails B, who is offline")
		convA := sup.start(ctx, "a")
		sup.waitState(ctx, convA, "Active", "IDLE", 2*time.Minute)
		Expect(sup.send(ctx, convA, "tell b "+cli.MarkRun+" mail-send b hi")).To(Succeed())
		sup.waitReply(ctx, convA, "run mail-send: exit 0: sent to b")
		Eventually(func(g Gomega) {
			obj, err := sup.client.Get(ctx, "agents", "default", "b")
			g.Expect(err).NotTo(HaveOccurred())
			n, _, _ := unstructuredInt(obj.Object, "status", "inboxUnread")
			g.Expect(n).To(BeEquivalentTo(1))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("B's next conversation starts with the backlog, attributed to the sender")
		convB := sup.start(ctx, "b")
		sup.waitState(ctx, convB, "Active", "", 2*time.Minute)
		var first transcriptwire.Entry
		Eventually(func(g Gomega) {
			entries := sup.transcript(ctx, convB)
			g.Expect(entries).NotTo(BeEmpty())
			first = entries[0]
			g.Expect(first.Speaker).To(Equal("mail:a"))
		}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(first.Text).To(Equal(`[Mail from agent "a"]: hi`))
		sup.waitReply(ctx, convB, `[Mail from agent "a"]: hi`)
		sup.waitState(ctx, convB, "Active", "IDLE", time.Minute)
		Eventually(func(g Gomega) {
			obj, err := sup.client.Get(ctx, "agents", "default", "b")
			g.Expect(err).NotTo(HaveOccurred())
			n, _, _ := unstructuredInt(obj.Object, "status", "inboxUnread")
			g.Expect(n).To(BeZero(), "delivered mail is read")
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("B may not mail A: the tool names the missing permission and nothing is sent")
		Expect(sup.send(ctx, convB, "reply "+cli.MarkRun+" mail-send a hello")).To(Succeed())
		sup.waitReply(ctx, convB, `run mail-send: exit 126: mail-send: refused: agent "b" may not send mail to "a": missing permission: "b"'s spec.peers.sendTo`)
		sup.waitState(ctx, convB, "Active", "IDLE", time.Minute)
		body, err := sup.client.DoRaw(ctx, "GET", client.ResourcePath("agents", "default", "a", "inbox"), "", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).NotTo(ContainSubstring("hello"))

		By("mail to a live B arrives with the platform prefix while it runs")
		Expect(sup.send(ctx, convA, "again "+cli.MarkRun+" mail-send b second")).To(Succeed())
		sup.waitReply(ctx, convA, "run mail-send: exit 0: sent to b")
		Eventually(func() []string { return bySpeaker(sup.transcript(ctx, convB), "mail:a") }).WithTimeout(30 * time.Second).Should(ContainElement(`[Mail from agent "a"]: second`))
		sup.waitReply(ctx, convB, `[Mail from agent "a"]: second`)
		sup.waitState(ctx, convB, "Active", "IDLE", time.Minute)

		By("remember and recall round-trip inside the container")
		Expect(sup.send(ctx, convB, "note "+cli.MarkRun+" remember notes deploys happen on tuesdays after the freeze")).To(Succeed())
		sup.waitReply(ctx, convB, "run remember: exit 0: remembered in notes as ")
		sup.waitState(ctx, convB, "Active", "IDLE", time.Minute)
		Expect(sup.send(ctx, convB, "find "+cli.MarkRun+" recall notes deploying")).To(Succeed())
		reply := sup.waitReply(ctx, convB, "run recall: exit 0:")
		Expect(reply.Text).To(ContainSubstring("happen on tuesdays"))

		By("an ungranted built-in is absent: B holds no transcript tools")
		Expect(sup.send(ctx, convB, "look "+cli.MarkRun+" transcript-read "+convA)).To(Succeed())
		sup.waitReply(ctx, convB, "run transcript-read: command not found")

		By("the transcripts keep who said what")
		bySpeaker := map[string]int{}
		for _, e := range sup.transcript(ctx, convB) {
			bySpeaker[e.Speaker]++
		}
		Expect(bySpeaker).To(HaveKeyWithValue("mail:a", 2), fmt.Sprint(bySpeaker))
		Expect(strings.Join(speakers(sup.transcript(ctx, convA)), ",")).NotTo(ContainSubstring("mail:"))
	})
})
