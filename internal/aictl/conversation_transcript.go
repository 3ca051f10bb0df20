package aictl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
			"(speaker is human, agent, tool or injected:<monitor>). --from starts at a cursor; -f keeps " +
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
	base := client.ResourcePath(conversationsPlural, g.ns(), name, wire.SubTranscript)
	out := bufio.NewWriter(g.streams.Out)
	defer out.Flush()
	next := max(o.from, 1)
	if !o.follow {
		for {
			data, err := cl.DoRaw(ctx, http.MethodGet, fmt.Sprintf("%s?from=%d&limit=%d", base, next, wire.MaxTranscriptLimit), "", nil)
			if err != nil {
				return &opError{op: "transcript of " + name, err: err}
			}
			var page wire.TranscriptPage
			if err := json.Unmarshal(data, &page); err != nil {
				return fmt.Errorf("transcript of %s: decoding: %w", name, err)
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
	var backoff client.Backoff
	for {
		progressed, err := o.stream(ctx, cl, base, &next, out)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return &opError{op: "transcript of " + name, err: err}
		}
		if progressed {
			backoff.Reset()
		}
		if !backoff.Wait(ctx) {
			return nil
		}
	}
}

// stream prints one follow stream until it ends, advancing *next past every
// printed entry so that the next stream resumes right after it.
func (o *transcriptOptions) stream(ctx context.Context, cl *client.Client, base string, next *int64, out *bufio.Writer) (bool, error) {
	resp, err := cl.Do(ctx, http.MethodGet, fmt.Sprintf("%s?follow=true&from=%d", base, *next), "", nil)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	progressed := false
	for {
		var e transcriptwire.Entry
		if err := dec.Decode(&e); err != nil {
			var syntaxErr *json.SyntaxError
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
				return progressed, fmt.Errorf("decoding the transcript stream: %w", err)
			}
			return progressed, nil // the stream ended or was cut: resume
		}
		if e.Cursor < *next {
			continue
		}
		if err := o.print(out, e); err != nil {
			return progressed, err
		}
		if err := out.Flush(); err != nil {
			return progressed, err
		}
		*next, progressed = e.Cursor+1, true
	}
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
