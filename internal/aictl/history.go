package aictl

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/history/historywire"
)

// newHistoryCommand is `aictl history search AGENT [QUERY]`: full-text search
// over every conversation transcript of an agent.
func newHistoryCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "history", Short: "Search an agent's transcript history"}
	var speaker, since, conversation, output string
	var limit int
	search := &cobra.Command{
		Use:   "search AGENT [QUERY]",
		Short: "Search every committed transcript entry of an agent's conversations",
		Long: "search finds committed transcript entries of AGENT's conversations. QUERY uses the query-string " +
			"syntax: words (stemmed, so \"deploy\" finds \"deploying\"), \"quoted phrases\", +required and -excluded " +
			"words. Hits come best first; without QUERY, newest first. Each hit names its conversation and cursor: " +
			"read around it with `aictl transcript CONVERSATION --from CURSOR`.",
		Example: "  aictl history search coder 'flaky test'\n" +
			"  aictl history search coder '+deploy -staging' --speaker human --since 24h\n" +
			"  aictl history search coder --speaker mail:reviewer -o json",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			agent := args[0]
			params := url.Values{}
			if len(args) == 2 {
				params.Set("q", args[1])
			}
			if speaker != "" {
				params.Set("speaker", speaker)
			}
			if conversation != "" {
				params.Set("conversation", conversation)
			}
			if since != "" {
				t, err := historywire.ParseSince(since, time.Now())
				if err != nil {
					return err
				}
				params.Set("since", t.UTC().Format(time.RFC3339Nano))
			}
			if limit != 0 {
				params.Set("limit", strconv.Itoa(limit))
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			path := client.ResourcePath("agents", g.ns(), agent, historywire.SubHistory) + "?" + params.Encode()
			op := "history search " + agent
			data, err := cl.DoRaw(cmd.Context(), http.MethodGet, path, "", nil)
			if err != nil {
				return &opError{op: op, err: err}
			}
			var page historywire.Page
			if err := json.Unmarshal(data, &page); err != nil {
				return fmt.Errorf("%s: decoding the reply: %w", op, err)
			}
			return printReply(g.streams, output, page, len(page.Items), "No history entries of agent "+agent+" match.",
				func(w io.Writer) error { return printHistory(w, page.Items) })
		},
	}
	f := search.Flags()
	f.StringVar(&speaker, "speaker", "", "only entries of this speaker: human, agent, tool, unattributed, mail:AGENT, injected:MONITOR")
	f.StringVar(&since, "since", "", "only entries since a duration ago (e.g. 2h, 30m) or an RFC 3339 time")
	f.StringVar(&conversation, "conversation", "", "only entries of this conversation of the agent")
	f.IntVar(&limit, "limit", 0, fmt.Sprintf("at most this many hits (default %d, at most %d)", historywire.DefaultLimit, historywire.MaxLimit))
	f.StringVarP(&output, "output", "o", "", "output format: json or yaml (default: table)")
	cmd.AddCommand(search)
	return cmd
}

// historySnippetRunes caps the SNIPPET column.
const historySnippetRunes = 100

func printHistory(w io.Writer, hits []historywire.Hit) error {
	tw := newTabWriter(w)
	writeRow(tw, []string{"TIME", "CONVERSATION", "CURSOR", "SPEAKER", "SNIPPET"})
	for _, h := range hits {
		writeRow(tw, []string{h.Time.UTC().Format(time.DateTime), h.Conversation, strconv.FormatInt(h.Cursor, 10), h.Speaker,
			oneLine(h.Snippet, historySnippetRunes)})
	}
	return tw.Flush()
}
