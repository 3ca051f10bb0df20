//go:build e2e

package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/fake/cli"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/layout"
)

var _ = Describe("An agent's persona", Label("conversations", "persona"), func() {
	It("reaches the CLI at every launch from the stored definition, edited or removed", func(ctx SpecContext) {
		dataDir := GinkgoT().TempDir()
		sup := startSpecSupervisor(ctx, dataDir)
		const agent = "pirate"
		sup.apply(ctx, `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"pirate","namespace":"default"},
			"spec":{"harness":"fake","persona":"You are Pirate Pete.\nSpeak like a pirate.",
			"env":[{"name":"AICLI_FAKE_DELAY","value":"50ms"}]}}`)
		file := filepath.Join(layout.Dir(dataDir).AgentHome("default", agent), cli.InstructionsPath)

		conv := sup.start(ctx, agent)
		sup.waitState(ctx, conv, "Active", "IDLE", 2*time.Minute)
		Expect(sup.send(ctx, conv, "who are you "+cli.MarkInstructions)).To(Succeed())
		sup.waitReply(ctx, conv, "fake[turn 1]: who are you !instructions | instructions: You are Pirate Pete.")
		b, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).To(ContainSubstring(harness.InstructionsBegin + "\nYou are Pirate Pete.\nSpeak like a pirate.\n" +
			harness.InstructionsEnd))

		// An edit applies at the next launch (here: the native resume after a pause).
		patchAgent(ctx, sup, agent, map[string]any{"persona": "You are Captain Ann."})
		pauseAndResume(ctx, sup, conv)
		Expect(sup.send(ctx, conv, "and now "+cli.MarkInstructions)).To(Succeed())
		sup.waitReply(ctx, conv, "fake[turn 2]: and now !instructions | instructions: You are Captain Ann.")

		// Without a persona the file goes.
		patchAgent(ctx, sup, agent, map[string]any{"persona": nil})
		pauseAndResume(ctx, sup, conv)
		Expect(sup.send(ctx, conv, "anyone "+cli.MarkInstructions)).To(Succeed())
		sup.waitReply(ctx, conv, "fake[turn 3]: anyone !instructions | "+cli.NoInstructions)
		_, err = os.Stat(file)
		Expect(os.IsNotExist(err)).To(BeTrue(), "instructions file after the persona was removed: %v", err)
	}, SpecTimeout(5*time.Minute))
})

// patchAgent merge-patches the agent's spec.
func patchAgent(ctx SpecContext, sup *supervisorProc, agent string, spec map[string]any) {
	GinkgoHelper()
	b, err := json.Marshal(map[string]any{"spec": spec})
	Expect(err).NotTo(HaveOccurred())
	_, err = sup.client.DoRaw(ctx, "PATCH", client.ResourcePath("agents", "default", agent), "application/merge-patch+json", b)
	Expect(err).NotTo(HaveOccurred())
}

// pauseAndResume pauses a live conversation and makes it Active and IDLE again.
func pauseAndResume(ctx SpecContext, sup *supervisorProc, conv string) {
	GinkgoHelper()
	sup.setDesired(ctx, conv, "Paused")
	sup.waitState(ctx, conv, "Paused", "", time.Minute)
	sup.setDesired(ctx, conv, "Active")
	sup.waitState(ctx, conv, "Active", "IDLE", 2*time.Minute)
}
