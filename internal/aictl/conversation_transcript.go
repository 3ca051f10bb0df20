package aictl

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/convapi/wire"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

type transcriptOptions struct {
	follow bool
	from   int64
	output string
}

func newTranscriptCommand(g *globalOptions) *cobra.Command {
	o := &transcriptOptions{}
	cmd := &cobra.Command{
		Use:   "transcript CONVERSATION [-f] [--from CURSOR] [-o json]",
		Short: "Print a conversation's attributed transcript, optionally following it",
		Long: "Transcript prints the conversation's committed transcript as '[cursor] speaker: text' lines " +
			"(speaker is human, agent, tool, injected:<monitor>, mail:<agent>, trigger:<attachment>, or unattributed: " +
			"a user turn nobody sent, written by the CLI itself). --from starts at a cursor; -f keeps " +
			"streaming new entries and resumes from the last cursor seen if the server ends the stream. " +
			"-o json prints one JSON entry per line.",
		Example: "  aictl transcript coder-x7k2p\n  aictl transcript coder-x7k2p -f --from 42\n" +
			"  aictl transcript coder-x7k2p -o json | jq -r .text",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output != "" && o.output != "json" {
				return fmt.Errorf("unknown output format %q: allowed formats are json (default: text lines)", o.output)
			}
			if o.from < 0 {
				return fmt.Errorf("--from %d: cursors start at 1", o.from)
			}
			cl, name, err := conversationTarget(g, args[0])
			if err != nil {
				return err
			}
			return o.run(cmd.Context(), g, cl, name)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&o.follow, "follow", "f", false, "keep streaming new entries")
	f.Int64Var(&o.from, "from", 1, "first cursor to print")
	f.StringVarP(&o.output, "output", "o", "", "output format: json (one entry per line)")
	return cmd
}

func (o *transcriptOptions) run(ctx context.Context, g *globalOptions, cl *client.Client, name string) error {
	out := bufio.NewWriter(g.streams.Out)
	defer out.Flush()
	next := max(o.from, 1)
	if !o.follow {
		for {
			page, err := cl.TranscriptPage(ctx, g.ns(), name, next, wire.MaxTranscriptLimit)
			if err != nil {
				return &opError{op: "transcript of " + name, err: err}
			}
			for _, e := range page.Items {
				if err := o.print(out, e); err != nil {
					return err
				}
			}
			if len(page.Items) == 0 || page.NextCursor <= next {
				return nil
			}
			next = page.NextCursor
		}
	}
	var printErr error
	err := cl.FollowTranscript(ctx, g.ns(), name, next, func(e transcriptwire.Entry) error {
		if printErr = o.print(out, e); printErr == nil {
			printErr = out.Flush()
		}
		return printErr
	}, nil)
	switch {
	case printErr != nil:
		return printErr
	case err != nil:
		return &opError{op: "transcript of " + name, err: err}
	}
	return nil
}

// print writes one entry: a JSON line, or "[cursor] speaker: text" with
// continuation lines indented.
func (o *transcriptOptions) print(w io.Writer, e transcriptwire.Entry) error {
	if o.output == "json" {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	text := strings.ReplaceAll(strings.TrimRight(e.Text, "\n"), "\n", "\n    ")
	_, err := fmt.Fprintf(w, "[%d] %s: %s\n", e.Cursor, e.Speaker, text)
	return err
}
