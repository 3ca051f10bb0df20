// Package builtin assembles the registry of harness adapters compiled into the
// guest. Only the fake harness is wired today; real CLIs get one package each
// under guest/harness/<name> and one line here.
package builtin

import (
	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/fake"
)

// Options carry per-harness settings resolved by the guest's main.
type Options struct {
	// Fake configures the fake harness adapter.
	Fake fake.Options
}

// Registry returns a new registry holding every built-in adapter.
func Registry(opts Options) (*harness.Registry, error) {
	return harness.NewRegistry(fake.New(opts.Fake))
}
