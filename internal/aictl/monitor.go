package aictl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
)

// newMonitorCommand is `aictl monitor create|rearm`.
func newMonitorCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "monitor",
		Short: "Create keyword monitors and re-arm their tripped breakers",
		Long: "A monitor is an ordinary agent that watches another agent's conversations for keywords, wakes on a " +
			"hit and may inject advice; a circuit breaker stops advice loops until a human re-arms it (docs/monitors.md).",
	}
	cmd.AddCommand(newMonitorCreateCommand(g), newMonitorRearmCommand(g))
	return cmd
}

func newMonitorCreateCommand(g *globalOptions) *cobra.Command {
	var (
		target, conversation, harness, model string
		keywords                             []string
		word, watchOnly, caseSensitive       bool
		maxHumanless                         int32
	)
	cmd := &cobra.Command{
		Use:   "create NAME --target AGENT --keywords K1,K2 [--word] [--harness H] [--model M] [--watch-only] [--max-humanless 5]",
		Short: "Create a monitor agent from the advisor persona and attach it to a target agent",
		Long: "create makes agent NAME from the built-in advisor persona (docs/monitors.md) and MonitorAttachment NAME " +
			"that makes it watch every conversation of the target agent (or --conversation) for the keywords. The " +
			"attachment is what lets the monitor read the target's transcripts (may-observe) and, unless --watch-only, " +
			"advise (may-inject): no Grant is needed. The monitor uses the target's harness unless --harness is given.",
		Example: "  aictl monitor create watchdog --target coder --keywords panic,deadlock --word\n" +
			"  aictl monitor create reviewer --target coder --keywords TODO --watch-only --model claude-haiku-4-5",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if target == "" {
				return errors.New("--target AGENT is required")
			}
			if len(keywords) == 0 {
				return errors.New("--keywords K1,K2 is required")
			}
			for _, k := range keywords {
				if strings.TrimSpace(k) == "" {
					return errors.New("--keywords: an empty keyword matches everything; give words separated by commas")
				}
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			req := client.MonitorRequest{Name: args[0], Target: target, Conversation: conversation, Keywords: keywords,
				CaseSensitive: caseSensitive, Harness: harness, Model: model, WatchOnly: watchOnly,
				Breaker: v1alpha1.BreakerSpec{MaxConsecutiveHumanless: maxHumanless}}
			if word {
				req.Match = v1alpha1.MatchWord
			}
			created, err := cl.CreateMonitor(cmd.Context(), g.ns(), req)
			for _, c := range created {
				fmt.Fprintf(g.streams.Out, "%s created\n", c)
			}
			var me *client.MonitorError
			if errors.As(err, &me) && !apierrors.IsAlreadyExists(err) {
				return &opError{op: me.Step, err: me.Err}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&target, "target", "", "the agent to watch (required)")
	f.StringVar(&conversation, "conversation", "", "watch only this conversation of the target")
	f.StringSliceVar(&keywords, "keywords", nil, "keywords that wake the monitor, comma-separated (required)")
	f.BoolVar(&word, "word", false, "match whole words only (default: substrings)")
	f.BoolVar(&caseSensitive, "case-sensitive", false, "match case (default: case-insensitive)")
	f.StringVar(&harness, "harness", "", "the monitor's CLI (default: the target's)")
	f.StringVar(&model, "model", "", "the monitor's model (default: its harness's)")
	f.BoolVar(&watchOnly, "watch-only", false, "analyse without advising (no may-inject)")
	f.Int32Var(&maxHumanless, "max-humanless", 5, "trip the breaker after this many wake→advise cycles without a human message")
	return cmd
}

func newMonitorRearmCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "rearm ATTACHMENT",
		Short: "Close a monitor's tripped circuit breaker (a human decision; it never closes by itself)",
		Long: "rearm closes the breaker of MonitorAttachment ATTACHMENT and restarts its counts. The conversations the " +
			"trip paused stay paused: resume them with aictl resume when you are ready.",
		Example: "  aictl monitor rearm watchdog",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			name := args[0]
			_, tripped, err := cl.RearmMonitor(cmd.Context(), g.ns(), name)
			if err != nil {
				return &opError{op: "re-arming monitorattachment " + name, err: err}
			}
			if !tripped {
				fmt.Fprintf(g.streams.Out, "monitorattachment/%s was not tripped: its breaker is closed\n", name)
				return nil
			}
			fmt.Fprintf(g.streams.Out, "monitorattachment/%s re-armed: its breaker is closed\n", name)
			return nil
		},
	}
}
