//go:build e2e && realcli

package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/fakeprovider"
)

// Claude Code reads its mail with the mounted mail-inbox tool: the agent is
// NotifyOnly, so the launch brings a one-line notice instead of the mail; the
// fake provider answers the notice with a Bash tool_use running mail-inbox,
// and the mail body reaches the model only as that tool's result.
var _ = Describe("Mail in a real CLI", Label("real-cli", "mail"), func() {
	It("is read by Claude Code through the mail-inbox tool", func(ctx SpecContext) {
		const body = "the staging database moves to port 6543 tonight"
		provider, err := fakeprovider.Start(fakeprovider.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(provider.Close)
		provider.SetToolCall(func(r fakeprovider.Request) *fakeprovider.ToolCall {
			if strings.Contains(r.LastUserText(), "mail-inbox") && !r.Carries(body) {
				return &fakeprovider.ToolCall{Name: "Bash", Input: json.RawMessage(`{"command":"mail-inbox --unread --ack","description":"read mail"}`)}
			}
			return nil
		})

		dataDir := GinkgoT().TempDir()
		setSecret(ctx, dataDir, "provider-key", "sk-aicli-test-0123456789abcdefghijklmnop")
		sup := startSpecSupervisor(ctx, dataDir, "--offline-pricing")
		sup.apply(ctx, fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"claude-mail","namespace":"default"},
			"spec":{"harness":"claude","model":"claude-sonnet-4-5-20250929","peers":{"delivery":"NotifyOnly"},
			"provider":{"endpoint":%q,"credential":"Secret","secretName":"provider-key"}}}`, provider.URL()))
		sup.apply(ctx, mailAgent("ops", "claude-mail"))
		mail, _ := json.Marshal(map[string]string{"to": "claude-mail", "body": body})
		_, err = sup.client.DoRaw(ctx, "POST", client.ResourcePath("agents", "default", "ops", "mail"), "application/json", mail)
		Expect(err).NotTo(HaveOccurred())

		conv := sup.start(ctx, "claude-mail")
		DeferCleanup(func(ctx SpecContext) {
			if !CurrentSpecReport().Failed() {
				return
			}
			for _, r := range provider.Conversations() {
				GinkgoWriter.Printf("provider call: op=%s last=%q\n", r.Op, r.LastUserText())
			}
			screen, _ := sup.client.DoRaw(ctx, "GET", client.ResourcePath("conversations", "default", conv, "screen"), "", nil)
			GinkgoWriter.Printf("screen:\n%s\n", screen)
		})
		Eventually(func() bool {
			for _, r := range provider.Conversations() {
				if r.Carries(body) {
					return true
				}
			}
			return false
		}).WithTimeout(15*time.Minute).WithPolling(250*time.Millisecond).Should(BeTrue(),
			"the mail body comes back to the model as mail-inbox's tool_result")
		Eventually(func(g Gomega) {
			obj, err := sup.client.Get(ctx, "agents", "default", "claude-mail")
			g.Expect(err).NotTo(HaveOccurred())
			n, _, _ := unstructuredInt(obj.Object, "status", "inboxUnread")
			g.Expect(n).To(BeZero(), "mail-inbox --ack marked it read")
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}, SpecTimeout(20*time.Minute))
})
