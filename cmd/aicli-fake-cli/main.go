// Command aicli-fake-cli is a fake AI CLI that behaves like a real TUI harness
// (prompt, spinner, permission prompts, native session store, resume) so the
// guest and the supervisor can be tested without a model provider.
package main

import (
	"os"

	"aicli.dev/aicli/guest/harness/fake/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
