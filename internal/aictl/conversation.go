package aictl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/convapi/wire"
)

const conversationsPlural = "conversations"

// conversationName accepts NAME or conversation/NAME (any alias of the kind).
func conversationName(cl *client.Client, arg string) (string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		return arg, nil
	}
	res, err := cl.Resource(kind)
	if err != nil || res.Plural != conversationsPlural {
		return "", fmt.Errorf("%q does not name a conversation", arg)
	}
	if name == "" {
		return "", fmt.Errorf("%q has no conversation name", arg)
	}
	return name, nil
}

// requestContext bounds one non-streaming request like the client does.
func requestContext(ctx context.Context, cl *client.Client) (context.Context, context.CancelFunc) {
	switch t := cl.Config().Timeout; {
	case t < 0:
		return context.WithCancel(ctx)
	case t == 0:
		return context.WithTimeout(ctx, client.DefaultTimeout)
	default:
		return context.WithTimeout(ctx, t)
	}
}

// conversationTarget is the client and conversation name for a command's
// CONVERSATION argument.
func conversationTarget(g *globalOptions, arg string) (*client.Client, string, error) {
	cl, err := g.client()
	if err != nil {
		return nil, "", err
	}
	name, err := conversationName(cl, arg)
	if err != nil {
		return nil, "", err
	}
	return cl, name, nil
}

func newStartCommand(g *globalOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "start AGENT",
		Short: "Start a conversation with an agent, or continue its live one",
		Long: "Start asks the supervisor for the agent's live conversation: when the agent has a conversation " +
			"that desires Active it is returned (continued), otherwise a new one is created (started). " +
			"The supervisor assembles everything else from its stored definitions.",
		Example: "  aictl start coder\n  aictl start coder -n team-a -o name",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch output {
			case "", "wide", "yaml", "json", "name":
			default:
				return fmt.Errorf("unknown output format %q: allowed formats are wide, yaml, json, name", output)
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			return runStart(cmd.Context(), g, cl, args[0], output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide, yaml, json or name (default: table)")
	return cmd
}

func runStart(ctx context.Context, g *globalOptions, cl *client.Client, agent, output string) error {
	ctx, cancel := requestContext(ctx, cl)
	defer cancel()
	resp, err := cl.Do(ctx, http.MethodPost, client.ResourcePath("agents", g.ns(), agent, wire.SubStart), "", nil)
	if err != nil {
		return &opError{op: "start " + agent, err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("start %s: reading the reply: %w", agent, err)
	}
	conv := &unstructured.Unstructured{}
	if err := conv.UnmarshalJSON(data); err != nil {
		return fmt.Errorf("start %s: decoding the conversation: %w", agent, err)
	}
	verb := "continued"
	if resp.StatusCode == http.StatusCreated {
		verb = "started"
	}
	res, err := cl.Resource(conversationsPlural)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("%s %s", ref(res, conv.GetName()), verb)
	switch output {
	case "", "wide":
		table, err := newTablePrinter(res, output == "wide", false)
		if err != nil {
			return err
		}
		if err := table.printTable(g.streams.Out, []unstructured.Unstructured{*conv}, true); err != nil {
			return err
		}
		fmt.Fprintln(g.streams.Out, note)
		return nil
	default:
		fmt.Fprintln(g.streams.ErrOut, note)
		return printObjects(g.streams.Out, output, []unstructured.Unstructured{*conv}, false, res)
	}
}

// newDesiredStateCommand builds pause, resume or archive: a merge patch of
// spec.desiredState.
func newDesiredStateCommand(g *globalOptions, verb string, state v1alpha1.ConversationState, short string) *cobra.Command {
	return &cobra.Command{
		Use:     verb + " CONVERSATION",
		Short:   short,
		Example: fmt.Sprintf("  aictl %s coder-x7k2p\n  aictl %s conversation/coder-x7k2p -n team-a", verb, verb),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, name, err := conversationTarget(g, args[0])
			if err != nil {
				return err
			}
			patch, err := json.Marshal(map[string]any{"spec": map[string]any{"desiredState": string(state)}})
			if err != nil {
				return err
			}
			obj, err := cl.Patch(cmd.Context(), conversationsPlural, g.ns(), name, patch, client.WriteOptions{})
			if err != nil {
				return &opError{op: verb + " " + name, err: err}
			}
			res, err := cl.Resource(conversationsPlural)
			if err != nil {
				return err
			}
			desired, _, _ := unstructured.NestedString(obj.Object, "spec", "desiredState")
			fmt.Fprintf(g.streams.Out, "%s desired state: %s\n", ref(res, obj.GetName()), desired)
			return nil
		},
	}
}

func newPauseCommand(g *globalOptions) *cobra.Command {
	return newDesiredStateCommand(g, "pause", v1alpha1.ConversationPaused,
		"Pause a conversation: stop its container, keep it resumable")
}

func newResumeCommand(g *globalOptions) *cobra.Command {
	return newDesiredStateCommand(g, "resume", v1alpha1.ConversationActive,
		"Resume a paused conversation with the CLI's native resume")
}

func newArchiveCommand(g *globalOptions) *cobra.Command {
	return newDesiredStateCommand(g, "archive", v1alpha1.ConversationArchived,
		"Archive a conversation: tear it down and keep it readable")
}

func newSendCommand(g *globalOptions) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "send CONVERSATION TEXT... | send CONVERSATION -f FILE",
		Short: "Send one message to a live conversation; returns once the guest accepted it",
		Long: "Send delivers one message atomically through the conversation's guest (as a paste, then submitted). " +
			"It returns when the guest has accepted the message, not when the agent answered: read the answer " +
			"with 'aictl transcript -f'. Several TEXT arguments are joined with spaces; -f - reads standard input.",
		Example: "  aictl send coder-x7k2p 'summarise README.md'\n  aictl send coder-x7k2p -f prompt.md\n" +
			"  git diff | aictl send coder-x7k2p -f -",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (file == "") == (len(args) < 2) {
				return fmt.Errorf("give the message either as TEXT or with -f FILE, not both or neither")
			}
			cl, name, err := conversationTarget(g, args[0])
			if err != nil {
				return err
			}
			text := strings.Join(args[1:], " ")
			if file != "" {
				if text, err = readMessageFile(g.streams.In, file); err != nil {
					return err
				}
			}
			body, err := json.Marshal(wire.SendRequest{Text: text})
			if err != nil {
				return err
			}
			if _, err := cl.DoRaw(cmd.Context(), http.MethodPost,
				client.ResourcePath(conversationsPlural, g.ns(), name, wire.SubSend), client.ContentTypeJSON, body); err != nil {
				return &opError{op: "send to " + name, err: err}
			}
			fmt.Fprintf(g.streams.ErrOut, "message accepted by conversation %s\n", name)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "read the message from FILE (- for standard input)")
	return cmd
}

// readMessageFile reads a message from path or stdin; it reads one byte past
// the guest's limit so the server, not aictl, judges the size.
func readMessageFile(stdin io.Reader, path string) (string, error) {
	var r io.Reader = stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("message file: %w", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, ptyapi.MaxMessageBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the message: %w", err)
	}
	return string(data), nil
}

func newScreenCommand(g *globalOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "screen CONVERSATION",
		Short:   "Print the rendered screen of a live conversation",
		Example: "  aictl screen coder-x7k2p\n  aictl screen coder-x7k2p -o json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format := "text"
			switch output {
			case "":
			case "json":
				format = "json"
			default:
				return fmt.Errorf("unknown output format %q: allowed formats are json (default: text)", output)
			}
			cl, name, err := conversationTarget(g, args[0])
			if err != nil {
				return err
			}
			data, err := cl.DoRaw(cmd.Context(), http.MethodGet,
				client.ResourcePath(conversationsPlural, g.ns(), name, wire.SubScreen)+"?format="+format, "", nil)
			if err != nil {
				return &opError{op: "screen of " + name, err: err}
			}
			_, err = g.streams.Out.Write(data)
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json (default: the screen's text)")
	return cmd
}
