package aictl

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"aicli.dev/aicli/internal/client"
)

// completionTimeout bounds the server lookup behind a shell completion.
const completionTimeout = 2 * time.Second

// completeKindsAndNames completes the first argument with resource kinds and
// later ones with the names of that kind in the namespace of -n, asking the
// server; errors just yield no suggestions.
func completeKindsAndNames(g *globalOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		cl, err := g.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if len(args) == 0 {
			var kinds []string
			for _, res := range cl.Registry().Resources() {
				kinds = append(kinds, res.Plural)
			}
			return kinds, cobra.ShellCompDirectiveNoFileComp
		}
		res, err := lookup(args[0], cl.Registry())
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		list, err := cl.List(ctx, res.Plural, g.ns(), client.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for i := range list.Items {
			if n := list.Items[i].GetName(); strings.HasPrefix(n, toComplete) {
				names = append(names, n)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
