package aictl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"aicli.dev/aicli/internal/recall/recallwire"
)

// newBucketCommand is `aictl bucket put|get|search|list|delete`: an agent's
// recall buckets, as the namespace's owner sees them.
func newBucketCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bucket",
		Short: "Put, search, list and delete the documents of an agent's recall buckets",
		Long: "Recall buckets hold documents an agent remembers (the built-in remember tool) and finds again by " +
			"full-text search (the recall tool); a Grant's spec.recall decides which buckets the agent's tools may " +
			"read or write. These commands act as the namespace's owner, on any bucket of any agent: a bucket " +
			"exists while it holds a document. See docs/recall.md.",
	}
	cmd.AddCommand(newBucketPutCommand(g), newBucketGetCommand(g), newBucketSearchCommand(g),
		newBucketListCommand(g), newBucketDeleteCommand(g))
	return cmd
}

func newBucketPutCommand(g *globalOptions) *cobra.Command {
	var title, output string
	var tags []string
	cmd := &cobra.Command{
		Use:   "put AGENT BUCKET (TEXT… | -)",
		Short: "Store a document in a bucket (the text, or standard input with -)",
		Long: fmt.Sprintf("Put stores a document in BUCKET of AGENT and prints its id. The body is the TEXT "+
			"arguments joined by spaces, or standard input when it is -; at most %d KiB.", recallwire.MaxBodyBytes>>10),
		Example: "  aictl bucket put coder notes --title 'Deploy' --tag ops 'The deploy runs at noon.'\n" +
			"  aictl bucket put coder notes --title README - < README.md",
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := strings.Join(args[2:], " ")
			if len(args) == 3 && args[2] == "-" {
				b, err := io.ReadAll(io.LimitReader(g.streams.In, recallwire.MaxBodyBytes+1))
				if err != nil {
					return err
				}
				if len(b) > recallwire.MaxBodyBytes {
					return fmt.Errorf("the document body is over the limit of %d bytes (%d KiB)", recallwire.MaxBodyBytes, recallwire.MaxBodyBytes>>10)
				}
				body = string(b)
			}
			data, err := json.Marshal(recallwire.NewDocument{Title: title, Tags: tags, Body: body})
			if err != nil {
				return err
			}
			var doc recallwire.Document
			if err := g.bucketCall(cmd, http.MethodPost, recallwire.AgentPath(g.ns(), args[0], args[1], recallwire.Documents),
				data, &doc); err != nil {
				return &opError{op: "put in bucket " + args[1] + " of agent " + args[0], err: err}
			}
			if output != "" {
				return printReply(g.streams, output, doc, 1, "", nil)
			}
			fmt.Fprintf(g.streams.Out, "document/%s created in bucket %s of agent %s\n", doc.ID, args[1], args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&title, "title", "", "the document's title")
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "a tag (repeatable)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: the id)")
	return cmd
}

func newBucketGetCommand(g *globalOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "get AGENT BUCKET ID",
		Short:   "Print a document's body (or the whole document with -o)",
		Example: "  aictl bucket get coder notes 0193a1b2c3d4e5f60718\n  aictl bucket get coder notes 0193a1b2c3d4e5f60718 -o json",
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			var doc recallwire.Document
			if err := g.bucketCall(cmd, http.MethodGet, recallwire.AgentPath(g.ns(), args[0], args[1], recallwire.Documents, args[2]),
				nil, &doc); err != nil {
				return &opError{op: "document " + args[2], err: err}
			}
			if output != "" {
				return printReply(g.streams, output, doc, 1, "", nil)
			}
			_, err := io.WriteString(g.streams.Out, doc.Body)
			if err == nil && !strings.HasSuffix(doc.Body, "\n") {
				_, err = io.WriteString(g.streams.Out, "\n")
			}
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: the body)")
	return cmd
}

func newBucketSearchCommand(g *globalOptions) *cobra.Command {
	var output string
	var limit int
	cmd := &cobra.Command{
		Use:   "search AGENT BUCKET QUERY…",
		Short: "Full-text search of a bucket, best match first",
		Long: "Search ranks the bucket's documents by BM25 relevance with English stemming (running finds runs). " +
			"QUERY is words (any of them), \"a phrase\", +required, -excluded, and title:, tags: or body: to " +
			"search one field. A malformed query is refused naming its byte offset.",
		Example: "  aictl bucket search coder notes deploy noon\n" +
			"  aictl bucket search coder notes '\"release train\" -friday' --limit 3 -o json",
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := strings.Join(args[2:], " ")
			path := recallwire.WithQuery(recallwire.AgentPath(g.ns(), args[0], args[1], recallwire.Search),
				url.Values{recallwire.ParamQuery: {q}, recallwire.ParamLimit: {recallwire.Itoa(limit)}})
			var res recallwire.SearchResult
			if err := g.bucketCall(cmd, http.MethodGet, path, nil, &res); err != nil {
				return &opError{op: "search bucket " + args[1] + " of agent " + args[0], err: err}
			}
			return printReply(g.streams, output, res, len(res.Items), "No documents match.",
				func(w io.Writer) error { return printHits(w, res.Items) })
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, fmt.Sprintf("at most this many hits (default %d, at most %d)",
		recallwire.DefaultSearchLimit, recallwire.MaxSearchLimit))
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: table)")
	return cmd
}

func printHits(w io.Writer, hits []recallwire.Hit) error {
	tw := newTabWriter(w)
	writeRow(tw, []string{"ID", "TITLE", "SCORE", "SNIPPET"})
	for _, h := range hits {
		writeRow(tw, []string{h.ID, orNone(oneLine(h.Title, 0)), strconv.FormatFloat(h.Score, 'f', 3, 64), oneLine(h.Snippet, 0)})
	}
	return tw.Flush()
}

func newBucketListCommand(g *globalOptions) *cobra.Command {
	var output, after string
	var limit int
	cmd := &cobra.Command{
		Use:   "list AGENT [BUCKET]",
		Short: "List an agent's buckets, or a bucket's documents",
		Example: "  aictl bucket list coder\n  aictl bucket list coder notes\n" +
			"  aictl bucket list coder notes --limit 20 --after 0193a1b2c3d4e5f60718 -o json",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				var list recallwire.BucketList
				if err := g.bucketCall(cmd, http.MethodGet, recallwire.AgentPath(g.ns(), args[0]), nil, &list); err != nil {
					return &opError{op: "buckets of agent " + args[0], err: err}
				}
				return printReply(g.streams, output, list, len(list.Items), "No recall buckets for agent "+args[0]+".",
					func(w io.Writer) error { return printBuckets(w, list.Items) })
			}
			path := recallwire.WithQuery(recallwire.AgentPath(g.ns(), args[0], args[1], recallwire.Documents),
				url.Values{recallwire.ParamLimit: {recallwire.Itoa(limit)}, recallwire.ParamAfter: {after}})
			var list recallwire.DocumentList
			if err := g.bucketCall(cmd, http.MethodGet, path, nil, &list); err != nil {
				return &opError{op: "documents of bucket " + args[1] + " of agent " + args[0], err: err}
			}
			err := printReply(g.streams, output, list, len(list.Items), "No documents in bucket "+args[1]+".",
				func(w io.Writer) error { return printDocuments(w, list.Items, time.Now()) })
			if err == nil && output == "" && list.Continue != "" {
				fmt.Fprintf(g.streams.ErrOut, "More documents follow: add --after %s\n", list.Continue)
			}
			return err
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "documents: at most this many (default 100, at most 1000)")
	cmd.Flags().StringVar(&after, "after", "", "documents: start after this id")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: table)")
	return cmd
}

func printBuckets(w io.Writer, items []recallwire.Bucket) error {
	tw := newTabWriter(w)
	writeRow(tw, []string{"BUCKET", "DOCUMENTS"})
	for _, b := range items {
		writeRow(tw, []string{b.Name, strconv.FormatUint(b.Documents, 10)})
	}
	return tw.Flush()
}

func printDocuments(w io.Writer, items []recallwire.Document, now time.Time) error {
	tw := newTabWriter(w)
	writeRow(tw, []string{"ID", "TITLE", "TAGS", "SIZE", "AGE"})
	for _, d := range items {
		writeRow(tw, []string{d.ID, orNone(oneLine(d.Title, 0)), orNone(strings.Join(d.Tags, ",")), strconv.Itoa(d.Size),
			duration.HumanDuration(now.Sub(d.Updated))})
	}
	return tw.Flush()
}

func newBucketDeleteCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "delete AGENT BUCKET ID",
		Short:   "Delete a document",
		Example: "  aictl bucket delete coder notes 0193a1b2c3d4e5f60718",
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.bucketCall(cmd, http.MethodDelete, recallwire.AgentPath(g.ns(), args[0], args[1], recallwire.Documents, args[2]),
				nil, nil); err != nil {
				return &opError{op: "delete document " + args[2], err: err}
			}
			fmt.Fprintf(g.streams.Out, "document %q deleted\n", args[2])
			return nil
		},
	}
}

// bucketCall sends one request and decodes the reply into out (when set).
func (g *globalOptions) bucketCall(cmd *cobra.Command, method, path string, body []byte, out any) error {
	cl, err := g.client()
	if err != nil {
		return err
	}
	data, err := cl.DoRaw(cmd.Context(), method, path, "", body)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return errors.Join(errors.New("decoding the reply"), err)
	}
	return nil
}
