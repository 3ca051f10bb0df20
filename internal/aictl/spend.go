package aictl

import (
	"context"
	"net/url"

	"github.com/spf13/cobra"

	"aicli.dev/aicli/internal/apischema"
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
		path := apischema.APIPath + "/spendhistory"
		if g.nsSet {
			path = apischema.APIPath + "/namespaces/" + url.PathEscape(g.ns()) + "/spendhistory"
		}
		if since != "" {
			path += "?since=" + url.QueryEscape(since)
		}
		return cl.DoRaw(ctx, "GET", path, "", nil)
	})
}
