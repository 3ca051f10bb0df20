package aictl

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/convapi/wire"
)

// newBudgetCommand is `aictl budget show|topup AGENT`: the agent's spend bucket, and adding funds or changing its
// rate (which resumes conversations the budget paused).
func newBudgetCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "budget", Short: "Show or top up an agent's spend budget"}
	var output string
	show := &cobra.Command{
		Use:   "show AGENT",
		Short: "Show the agent's budget: rate, burst, available, spent and topped up",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBudget(cmd, g, args[0], http.MethodGet, nil, output)
		},
	}
	show.Flags().StringVarP(&output, "output", "o", "", "output format: json (default: text)")
	var usd, rate string
	topup := &cobra.Command{
		Use:   "topup AGENT --usd N [--rate R]",
		Short: "Add funds to the agent's budget and/or change its rate; resumes conversations the budget paused",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if usd == "" && rate == "" {
				return fmt.Errorf("budget topup %s: set --usd, --rate or both", args[0])
			}
			body, err := json.Marshal(wire.TopUpRequest{USD: usd, USDPerHour: rate})
			if err != nil {
				return err
			}
			return runBudget(cmd, g, args[0], http.MethodPost, body, output)
		},
	}
	topup.Flags().StringVar(&usd, "usd", "", "dollars to add to the bucket (decimal, e.g. 5 or 0.25)")
	topup.Flags().StringVar(&rate, "rate", "", "new accrual rate in dollars per hour (spec.budget.usdPerHour)")
	topup.Flags().StringVarP(&output, "output", "o", "", "output format: json (default: text)")
	cmd.AddCommand(show, topup)
	return cmd
}

func runBudget(cmd *cobra.Command, g *globalOptions, agent, method string, body []byte, output string) error {
	if output != "" && output != "json" {
		return fmt.Errorf("unknown output format %q: allowed formats are json", output)
	}
	cl, err := g.client()
	if err != nil {
		return err
	}
	path := client.ResourcePath("agents", g.ns(), agent, wire.SubBudget)
	op := "budget show " + agent
	if method == http.MethodPost {
		path, op = path+"/"+wire.BudgetTopUp, "budget topup "+agent
	}
	data, err := cl.DoRaw(cmd.Context(), method, path, "application/json", body)
	if err != nil {
		return &opError{op: op, err: err}
	}
	if output == "json" {
		_, err := g.streams.Out.Write(data)
		return err
	}
	var v wire.BudgetView
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("%s: decoding the reply: %w", op, err)
	}
	printBudget(g.streams.Out, &v)
	return nil
}

func printBudget(w io.Writer, v *wire.BudgetView) {
	fmt.Fprintf(w, "Agent:       %s\n", v.Agent)
	fmt.Fprintf(w, "Rate:        $%s/h (burst $%s, max wait %ds)\n", v.USDPerHour, v.BurstUSD, v.MaxWaitSeconds)
	fmt.Fprintf(w, "Available:   $%s (as of %s)\n", v.AvailableUSD, v.AsOf)
	fmt.Fprintf(w, "Spent:       $%s\n", v.SpentUSD)
	fmt.Fprintf(w, "Topped up:   $%s\n", v.ToppedUpUSD)
	for _, c := range v.Resumed {
		fmt.Fprintf(w, "Resumed:     conversation/%s\n", c)
	}
}
