//go:build e2e && realcli

package e2e_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/internal/fakeprovider"
)

// realCLIPersona is the persona the real-CLI tier gives an agent: version 1
// when it is created, version 2 after the edit made while it is paused.
func realCLIPersona(harness string, version int) string {
	animal := map[int]string{1: "Quokka", 2: "Wombat"}[version]
	return fmt.Sprintf("You are %s-%d, the %s test agent of aicli.\nKeep every answer short.", animal, version, harness)
}

// expectPersona checks that the provider's request for the turn whose user
// text is turn carried every line of persona (in the system prompt, the
// messages or the CLI's injected context, wherever the CLI puts its standing
// instructions).
func expectPersona(provider *fakeprovider.Server, turn, persona string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var found bool
		for _, r := range provider.Conversations() {
			if r.LastUserText() != turn {
				continue
			}
			found = true
			for _, line := range strings.Split(persona, "\n") {
				g.Expect(r.Carries(line)).To(BeTrue(), "the request for %q does not carry the persona line %q; system: %q",
					turn, line, r.System)
			}
		}
		g.Expect(found).To(BeTrue(), "no provider request for %q", turn)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// logStalePersona reports whether the request for turn still carried the
// persona from before an edit: Claude Code and Codex keep the first copy in
// the resumed history and send the edited one after it; Gemini CLI and
// OpenCode put the file's current text in the system prompt only.
func logStalePersona(harness string, provider *fakeprovider.Server, turn, old string) {
	for _, r := range provider.Conversations() {
		if r.LastUserText() == turn {
			GinkgoWriter.Printf("%s: the request after the persona edit still carries the old persona: %v\n", harness,
				r.Carries(strings.SplitN(old, "\n", 2)[0]))
			return
		}
	}
}
