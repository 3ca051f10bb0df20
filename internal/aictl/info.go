package aictl

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"aicli.dev/aicli/internal/supinfo/infowire"
)

// newInfoCommand is `aictl info`: the supervisor's identity, uptime and
// capacity (GET /apis/aicli.dev/v1alpha1/info, docs/architecture.md).
func newInfoCommand(g *globalOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "info [-o json|yaml]",
		Short: "Show the supervisor's id, version, uptime and capacity (live conversations, containers, disk)",
		Long: "info asks the supervisor for its identity and capacity: live conversations, the CPU and memory of its " +
			"containers (a Docker sample at most a few seconds old) and the disk used by agent homes and guest images. " +
			"A token bound to namespaces sees only its namespaces' containers and no disk figures.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			info, err := cl.Info(cmd.Context())
			if err != nil {
				return &opError{op: "reading the supervisor's info", err: err}
			}
			return printReply(g.streams, output, info, 1, "", func(w io.Writer) error { return printInfo(w, info) })
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: text)")
	return cmd
}

func printInfo(out io.Writer, info *infowire.Info) error {
	w := newTabWriter(out)
	c := info.Capacity
	fmt.Fprintf(w, "Supervisor:\t%s\n", info.SupervisorID)
	fmt.Fprintf(w, "Version:\t%s\n", info.Version)
	fmt.Fprintf(w, "Started:\t%s (up %s)\n", info.StartTime.Format(time.RFC3339),
		(time.Duration(info.UptimeSeconds) * time.Second).String())
	fmt.Fprintf(w, "Ready:\t%t\n", info.Ready)
	fmt.Fprintf(w, "Live conversations:\t%d\n", c.LiveConversations)
	fmt.Fprintf(w, "Containers:\t%d, CPU %.1f%%, memory %s\n", len(c.Containers), c.CPUPercent, infowire.FormatBytes(c.MemoryBytes))
	if c.StatsError != "" {
		fmt.Fprintf(w, "  sampling failed:\t%s\n", c.StatsError)
	}
	if d := c.Disk; d != nil {
		fmt.Fprintf(w, "Disk:\thomes %s, guest images %s\n", infowire.FormatBytes(d.HomesBytes), infowire.FormatBytes(d.ImagesBytes))
		if d.Error != "" {
			fmt.Fprintf(w, "  measuring failed:\t%s\n", d.Error)
		}
	}
	if info.Restricted {
		fmt.Fprintf(w, "Scope:\tyour token's namespaces only\n")
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(c.Containers) > 0 {
		fmt.Fprintln(out)
		w = newTabWriter(out)
		fmt.Fprintln(w, "NAMESPACE\tAGENT\tCONVERSATION\tCPU\tMEMORY")
		for _, ct := range c.Containers {
			cpu, mem := fmt.Sprintf("%.1f%%", ct.CPUPercent), infowire.FormatBytes(ct.MemoryBytes)
			if ct.Error != "" {
				cpu, mem = "?", "?"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", ct.Namespace, ct.Agent, ct.Conversation, cpu, mem)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
}
