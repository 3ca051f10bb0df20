package aictl

import (
	"context"

	"github.com/spf13/cobra"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/spend/spendcli"
)

// newSpendCommand is `aictl spend`: the supervisor's spend history (all
// namespaces, or one with -n), or --local over session directories.
func newSpendCommand(g *globalOptions) *cobra.Command {
	return spendcli.NewCommand(func(ctx context.Context, since string) ([]byte, error) {
		cl, err := g.client()
		if err != nil {
			return nil, err
		}
		ns := ""
		if g.nsSet {
			ns = g.ns()
		}
		return cl.SpendHistoryJSON(ctx, ns, client.SpendOptions{Since: since})
	})
}
