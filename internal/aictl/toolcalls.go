package aictl

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/toolcalls"
)

// newToolCallsCommand is `aictl tool-calls CONV`: the conversation's tool
// calls, read from its agent's grants' history.
func newToolCallsCommand(g *globalOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "tool-calls CONVERSATION",
		Short: "List a conversation's tool calls, newest last",
		Long: "tool-calls lists the calls a conversation made to its granted tools, from the history of the " +
			"Grants whose subject is its agent: tool, grant, exit code, duration, bytes in and out, the " +
			"refusal reason of refused calls, and age. Arguments and secrets are never recorded.",
		Example: "  aictl tool-calls coder-x7k2p\n  aictl tool-calls coder-x7k2p -o json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, name, err := conversationTarget(g, args[0])
			if err != nil {
				return err
			}
			data, err := cl.DoRaw(cmd.Context(), http.MethodGet,
				client.ResourcePath(conversationsPlural, g.ns(), name, toolcalls.SubToolCalls), "", nil)
			if err != nil {
				return &opError{op: "tool calls of " + name, err: err}
			}
			var list toolcalls.List
			if err := json.Unmarshal(data, &list); err != nil {
				return fmt.Errorf("decoding the tool calls of %s: %w", name, err)
			}
			return printReply(g.streams, output, list, len(list.Items), "No tool calls recorded for conversation "+name+".",
				func(w io.Writer) error { return printToolCalls(w, list.Items, time.Now()) })
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: table)")
	return cmd
}

func printToolCalls(w io.Writer, calls []toolcalls.Call, now time.Time) error {
	tw := newTabWriter(w)
	writeRow(tw, append([]string{"TOOL", "GRANT"}, callColumns...))
	for _, c := range calls {
		writeRow(tw, append([]string{c.Tool, c.Grant}, callCells(c.ToolCall, now)...))
	}
	return tw.Flush()
}

// callColumns are the columns every table of tool calls ends with.
var callColumns = []string{"EXIT", "DURATION", "BYTES IN", "BYTES OUT", "REFUSED", "AGE"}

// callCells are the cells under callColumns.
func callCells(c v1alpha1.ToolCall, now time.Time) []string {
	return []string{
		strconv.Itoa(int(c.ExitCode)),
		(time.Duration(c.DurationMillis) * time.Millisecond).String(),
		strconv.FormatInt(c.BytesIn, 10),
		strconv.FormatInt(c.BytesOut, 10),
		orNone(c.Refused),
		duration.HumanDuration(now.Sub(c.At.Time)),
	}
}
