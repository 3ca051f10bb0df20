// Command spendlocal runs `aictl spend` standalone (always usable with --local) for the ccusage comparison and the
// benchmark, without the rest of aictl.
package main

import (
	"os"

	"aicli.dev/aicli/internal/spend/spendcli"
)

func main() {
	if err := spendcli.NewCommand(nil).Execute(); err != nil {
		os.Exit(1)
	}
}
