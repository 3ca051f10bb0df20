package aictl

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newAPIResourcesCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "api-resources",
		Short:   "List the resource types the server serves",
		Example: "  aictl api-resources",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			list, err := cl.Discovery(cmd.Context())
			if err != nil {
				return err
			}
			tw := newTabWriter(g.streams.Out)
			writeRow(tw, []string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"})
			for _, r := range list.APIResources {
				if strings.Contains(r.Name, "/") {
					continue // subresources
				}
				writeRow(tw, []string{r.Name, strings.Join(r.ShortNames, ","), list.GroupVersion,
					fmt.Sprint(r.Namespaced), r.Kind})
			}
			return tw.Flush()
		},
	}
}
