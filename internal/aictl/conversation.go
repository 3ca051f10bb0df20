package aictl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

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

// defaultLiveWait is how long start --wait and send wait for a conversation
// to become live.
const defaultLiveWait = 2 * time.Minute

// waitFlag is --wait[=TIMEOUT]: off, bare (defaultLiveWait) or a duration.
type waitFlag struct {
	set     bool
	timeout time.Duration
}

func (w *waitFlag) String() string {
	if !w.set {
		return ""
	}
	return w.timeout.String()
}

func (w *waitFlag) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 90s or 5m", v)
	}
	if d <= 0 {
		return fmt.Errorf("%q: the timeout must be positive", v)
	}
	w.set, w.timeout = true, d
	return nil
}

func (w *waitFlag) Type() string { return "duration" }

func newStartCommand(g *globalOptions) *cobra.Command {
	var output string
	var wait waitFlag
	cmd := &cobra.Command{
		Use:   "start AGENT [--wait[=TIMEOUT]]",
		Short: "Start a conversation with an agent, or continue its live one",
		Long: "Start asks the supervisor for the agent's live conversation: when the agent has a conversation " +
			"that desires Active it is returned (continued), otherwise a new one is created (started). " +
			"The supervisor assembles everything else from its stored definitions.\n\n" +
			"Start returns at once, before the conversation's container, guest and CLI are up. With --wait it " +
			"waits (up to TIMEOUT, " + defaultLiveWait.String() + " when bare) until the conversation is live, its " +
			"Ready condition True for its current generation, and then prints only its name (or the live object " +
			"with -o), so that C=$(aictl start --wait AGENT) can be sent to at once. It exits non-zero when the " +
			"timeout passes first, saying what it waited for and the conversation's current Ready reason.",
		Example: "  aictl start coder\n  aictl start coder -n team-a -o name\n" +
			"  C=$(aictl start --wait coder) && aictl send \"$C\" 'summarise README.md'\n  aictl start coder --wait=5m",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 && wait.set {
				if _, err := time.ParseDuration(args[1]); err == nil {
					return fmt.Errorf("--wait takes its timeout after an equals sign: --wait=%s", args[1])
				}
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
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
			return runStart(cmd.Context(), g, cl, args[0], output, wait)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide, yaml, json or name (default: table; with --wait: the name)")
	f := cmd.Flags().VarPF(&wait, "wait", "", "wait until the conversation is live, then print its name; "+
		"--wait=TIMEOUT bounds the wait (default "+defaultLiveWait.String()+")")
	f.NoOptDefVal = defaultLiveWait.String()
	return cmd
}

func runStart(ctx context.Context, g *globalOptions, cl *client.Client, agent, output string, wait waitFlag) error {
	reqCtx, cancel := requestContext(ctx, cl)
	defer cancel()
	resp, err := cl.Do(reqCtx, http.MethodPost, client.ResourcePath("agents", g.ns(), agent, wire.SubStart), "", nil)
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
	if wait.set {
		fmt.Fprintf(g.streams.ErrOut, "%s; waiting up to %s for it to be live\n", note, wait.timeout)
		wctx, cancel := context.WithTimeout(ctx, wait.timeout)
		defer cancel()
		live, err := cl.WaitConversationLive(wctx, g.ns(), conv.GetName())
		if err != nil {
			return &opError{op: "start " + agent, err: notLiveError(g, err, wait.timeout)}
		}
		fmt.Fprintf(g.streams.ErrOut, "%s is live\n", ref(res, conv.GetName()))
		if output == "" {
			fmt.Fprintln(g.streams.Out, live.GetName())
			return nil
		}
		conv, note = live, ""
	}
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
		if note != "" {
			fmt.Fprintln(g.streams.ErrOut, note)
		}
		return printObjects(g.streams.Out, output, []unstructured.Unstructured{*conv}, false, res)
	}
}

// notLiveError phrases a wait for a live conversation that ended without
// it: how long was waited for what, or the command that makes it live.
func notLiveError(g *globalOptions, err error, waited time.Duration) error {
	var nl *client.NotLiveError
	if !errors.As(err, &nl) {
		return err
	}
	ns := ""
	if g.ns() != DefaultNamespace {
		ns = " -n " + g.ns()
	}
	switch {
	case errors.Is(nl.Err, context.DeadlineExceeded):
		return fmt.Errorf("timed out after %s waiting for conversation %s to be live (Ready=True for generation %d); %s "+
			"(see 'aictl describe conversation %s%s')", waited, nl.Name, nl.Generation, nl.ReadySummary(), nl.Name, ns)
	case nl.Err != nil || nl.Deleted || nl.Deleting || nl.Stalled != nil:
		return err
	case nl.Desired == v1alpha1.ConversationPaused:
		return fmt.Errorf("%w: resume it first (aictl resume %s%s)", err, nl.Name, ns)
	case nl.Desired == v1alpha1.ConversationArchived:
		return fmt.Errorf("%w: start a new conversation for agent %s (aictl start %s%s)", err, nl.Agent, nl.Agent, ns)
	}
	return err
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
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "send CONVERSATION TEXT... | send CONVERSATION -f FILE",
		Short: "Send one message to a conversation; returns once the guest accepted it",
		Long: "Send delivers one message atomically through the conversation's guest (as a paste, then submitted). " +
			"It returns when the guest has accepted the message, not when the agent answered: read the answer " +
			"with 'aictl transcript -f'. Several TEXT arguments are joined with spaces; -f - reads standard input.\n\n" +
			"A conversation that is starting (desired Active, not live yet) is waited for, up to --timeout, " +
			"and then sent to; --timeout=0 fails at once instead. A Paused or Archived conversation fails at " +
			"once, naming the command that makes it live.",
		Example: "  aictl send coder-x7k2p 'summarise README.md'\n  aictl send coder-x7k2p -f prompt.md\n" +
			"  git diff | aictl send coder-x7k2p -f -\n  aictl send coder-x7k2p --timeout=5m 'start when you are up'",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (file == "") == (len(args) < 2) {
				return fmt.Errorf("give the message either as TEXT or with -f FILE, not both or neither")
			}
			if timeout < 0 {
				return fmt.Errorf("--timeout must not be negative, not %s (0 fails at once when the conversation is not live)", timeout)
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
			if timeout == 0 {
				err = cl.Send(cmd.Context(), g.ns(), name, text)
			} else {
				ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
				defer cancel()
				err = cl.SendWhenLive(ctx, g.ns(), name, text, func(nl *client.NotLiveError) {
					fmt.Fprintf(g.streams.ErrOut, "conversation %s is not live yet (%s); waiting up to %s\n",
						name, nl.ReadySummary(), timeout)
				})
			}
			if err != nil {
				return &opError{op: "send to " + name, err: notLiveError(g, err, timeout)}
			}
			fmt.Fprintf(g.streams.ErrOut, "message accepted by conversation %s\n", name)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "read the message from FILE (- for standard input)")
	cmd.Flags().DurationVar(&timeout, "timeout", defaultLiveWait,
		"how long to wait for a starting conversation to become live (0: fail at once when it is not live)")
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
