package builtin

import (
	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/claude"
	"aicli.dev/aicli/guest/harness/codex"
	"aicli.dev/aicli/guest/harness/fake"
	"aicli.dev/aicli/guest/harness/gemini"
	"aicli.dev/aicli/guest/harness/opencode"
)

// Options carry per-harness settings resolved by the guest's main.
type Options struct {
	// Fake configures the fake harness adapter.
	Fake fake.Options
}

// Registry returns a new registry holding every built-in adapter.
func Registry(opts Options) (*harness.Registry, error) {
	return harness.NewRegistry(fake.New(opts.Fake), claude.New(claude.Options{}), codex.New(codex.Options{}),
		gemini.New(gemini.Options{}),
		opencode.New(opencode.Options{}))
}
