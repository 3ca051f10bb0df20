package aictl

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/monitor/monitorwire"
)

const (
	agentsPlural             = "agents"
	monitorAttachmentsPlural = "monitorattachments"
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
			name := args[0]
			if target == "" {
				return errors.New("--target AGENT is required")
			}
			var kws []v1alpha1.Keyword
			for _, k := range keywords {
				if k = strings.TrimSpace(k); k == "" {
					return errors.New("--keywords: an empty keyword matches everything; give words separated by commas")
				}
				mode := v1alpha1.MatchSubstring
				if word {
					mode = v1alpha1.MatchWord
				}
				kws = append(kws, v1alpha1.Keyword{Text: k, Mode: mode})
			}
			if len(kws) == 0 {
				return errors.New("--keywords K1,K2 is required")
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			ctx, ns := cmd.Context(), g.ns()
			if harness == "" {
				t, err := cl.Get(ctx, agentsPlural, ns, target)
				if err != nil {
					return &opError{op: "reading target agent " + target, err: err}
				}
				harness, _, _ = unstructured.NestedString(t.Object, "spec", "harness")
			}
			agent := &v1alpha1.Agent{Spec: v1alpha1.AgentSpec{Harness: v1alpha1.Harness(harness), Model: model,
				Persona: monitorwire.AdvisorPersona}}
			agent.Namespace, agent.Name = ns, name
			mode := v1alpha1.MonitorAdvise
			if watchOnly {
				mode = v1alpha1.MonitorWatchOnly
			}
			att := &v1alpha1.MonitorAttachment{Spec: v1alpha1.MonitorAttachmentSpec{Monitor: name,
				Target:  v1alpha1.MonitorTarget{Agent: target, Conversation: conversation},
				Trigger: v1alpha1.TriggerSpec{Keywords: kws, CaseSensitive: caseSensitive}, Mode: mode,
				Breaker: v1alpha1.BreakerSpec{MaxConsecutiveHumanless: maxHumanless}}}
			att.Namespace, att.Name = ns, name
			// The server judges the trigger (duplicates, modes) before anything is created: no agent without its attachment.
			u, err := cl.FromTyped(att)
			if err != nil {
				return err
			}
			if _, err := cl.Create(ctx, u, client.WriteOptions{DryRun: true}); err != nil {
				return &opError{op: "checking monitorattachment " + name, err: err}
			}
			for _, obj := range []struct {
				kind string
				o    runtime.Object
			}{{"agent", agent}, {"monitorattachment", att}} {
				u, err := cl.FromTyped(obj.o)
				if err != nil {
					return err
				}
				if _, err := cl.Create(ctx, u, client.WriteOptions{}); err != nil {
					if apierrors.IsAlreadyExists(err) {
						return fmt.Errorf("%s %q already exists in namespace %q: pick another NAME", obj.kind, name, ns)
					}
					return &opError{op: "creating " + obj.kind + " " + name, err: err}
				}
				fmt.Fprintf(g.streams.Out, "%s/%s created\n", obj.kind, name)
			}
			return nil
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
			before, err := cl.Get(cmd.Context(), monitorAttachmentsPlural, g.ns(), name)
			if err != nil {
				return &opError{op: "reading monitorattachment " + name, err: err}
			}
			data, err := cl.DoRaw(cmd.Context(), http.MethodPost,
				client.ResourcePath(monitorAttachmentsPlural, g.ns(), name, monitorwire.SubRearm), "", nil)
			if err != nil {
				return &opError{op: "re-arming " + name, err: err}
			}
			var a v1alpha1.MonitorAttachment
			if err := json.Unmarshal(data, &a); err != nil {
				return fmt.Errorf("decoding the re-armed attachment %s: %w", name, err)
			}
			if tripped, _, _ := unstructured.NestedString(before.Object, "status", "trippedAt"); tripped == "" {
				fmt.Fprintf(g.streams.Out, "monitorattachment/%s was not tripped: its breaker is closed\n", name)
				return nil
			}
			fmt.Fprintf(g.streams.Out, "monitorattachment/%s re-armed: its breaker is closed\n", name)
			return nil
		},
	}
}
