//go:build e2e && realcli

package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/fakeprovider"
)

// Claude Code runs a granted tool through its own Bash tool: the fake
// provider scripts the tool_use, the CLI runs the mounted executable without
// asking (the grant pre-approves it), the call runs host-side with the secret,
// and the result goes back to the model as the tool_result.
var _ = Describe("A granted tool in a real CLI", Label("real-cli", "tools"), func() {
	It("is run by Claude Code's Bash tool and its result reaches the model", func(ctx SpecContext) {
		provider, err := fakeprovider.Start(fakeprovider.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(provider.Close)
		provider.SetToolCall(func(r fakeprovider.Request) *fakeprovider.ToolCall {
			// Once: a request carrying the tool's output (the tool_result) gets a text reply.
			if strings.Contains(r.LastUserText(), "use the greet tool") && !r.Carries("hello world") {
				return &fakeprovider.ToolCall{Name: "Bash", Input: json.RawMessage(`{"command":"greet world","description":"greet"}`)}
			}
			return nil
		})

		dataDir := GinkgoT().TempDir()
		setSecret(ctx, dataDir, "provider-key", "sk-aicli-test-0123456789abcdefghijklmnop")
		const toolSecret = "sk-tool-secret-for-claude-0123456789"
		setSecret(ctx, dataDir, "greet-key", toolSecret)
		sum := sha256.Sum256([]byte(toolSecret))
		wantHash := hex.EncodeToString(sum[:])[:16]
		sup := startSpecSupervisor(ctx, dataDir, "--offline-pricing")
		sup.apply(ctx, fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"claude-tools","namespace":"default"},
			"spec":{"harness":"claude","model":"claude-sonnet-4-5-20250929","provider":{"endpoint":%q,"credential":"Secret","secretName":"provider-key"}}}`,
			provider.URL()))
		sup.apply(ctx, shellToolClass("greet", greetScript, 30))
		sup.apply(ctx, toolGrant("greet", "claude-tools", "greet"))

		conv := sup.start(ctx, "claude-tools")
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
		sup.waitState(ctx, conv, "Active", "IDLE", 15*time.Minute)
		Expect(sup.send(ctx, conv, "please use the greet tool")).To(Succeed())
		Eventually(func() bool {
			for _, r := range provider.Conversations() {
				if r.Carries(wantHash + "\nhello world") {
					return true
				}
			}
			return false
		}).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(BeTrue(),
			"the tool's output (hash of the host-side secret) comes back to the model as the tool_result")
		for _, r := range provider.Conversations() {
			Expect(r.Carries(toolSecret)).To(BeFalse(), "the secret reached the model")
		}
		Eventually(func(g Gomega) {
			obj, err := sup.client.Get(ctx, "grants", "default", "greet")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(field(obj, "status", "lastCall", "tool")).To(Equal("greet"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}, SpecTimeout(20*time.Minute))
})
