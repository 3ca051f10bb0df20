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

	"github.com/spf13/cobra"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/mailbox/mailwire"
)

// newMailCommand is `aictl mail send|inbox`: the agents' mailbox as their
// owner sees it (docs/mail.md).
func newMailCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mail",
		Short: "Send mail as an agent, read and acknowledge an agent's inbox",
		Long: "Agents of one namespace (one owner) exchange mail through the supervisor's mailbox. A send is " +
			"checked against the sender's spec.peers.sendTo (and its Grants' peers) and the recipient's " +
			"spec.peers.receiveFrom, then appended durably; nothing is appended when it is refused. Mail reaches " +
			"the recipient's live conversation when its CLI is idle, or its next conversation; mail never starts one.",
	}
	cmd.AddCommand(newMailSendCommand(g), newMailInboxCommand(g))
	return cmd
}

func newMailSendCommand(g *globalOptions) *cobra.Command {
	var from, to, convCtx, key string
	cmd := &cobra.Command{
		Use:   "send --from AGENT --to AGENT (TEXT | -)",
		Short: "Send one message from an agent to a peer (TEXT, or - for standard input)",
		Example: "  aictl mail send --from planner --to coder 'the spec is in docs/plan.md'\n" +
			"  git diff | aictl mail send --from reviewer --to coder -",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" || to == "" {
				return errors.New("mail send: give both --from AGENT and --to AGENT")
			}
			body := args[0]
			if body == "-" {
				var err error
				if body, err = readMailBody(g.streams.In); err != nil {
					return fmt.Errorf("mail send: %w", err)
				}
			}
			req, err := json.Marshal(mailwire.SendRequest{To: to, Body: body, ConversationContext: convCtx, IdempotencyKey: key})
			if err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			data, err := cl.DoRaw(cmd.Context(), http.MethodPost, client.ResourcePath("agents", g.ns(), from, mailwire.SubMail),
				"application/json", req)
			if err != nil {
				return &opError{op: "mail send", err: err}
			}
			var sent mailwire.SendResponse
			if err := json.Unmarshal(data, &sent); err != nil {
				return fmt.Errorf("mail send: decoding the reply: %w", err)
			}
			note := ""
			if sent.Replayed {
				note = " (already sent with this idempotency key)"
			}
			fmt.Fprintf(g.streams.Out, "mail %d sent from %s to %s%s\n", sent.Seq, from, to, note)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the sending agent")
	cmd.Flags().StringVar(&to, "to", "", "the receiving agent (same namespace)")
	cmd.Flags().StringVar(&convCtx, "context", "", "what the mail is about (conversationContext)")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "a retry with the same key is sent at most once")
	return cmd
}

// readMailBody reads a body from r without its trailing line break, refusing
// more than a message may hold before sending anything.
func readMailBody(r io.Reader) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, mailwire.MaxBodyBytes+3))
	if err != nil {
		return "", err
	}
	body := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	if len(body) > mailwire.MaxBodyBytes {
		return "", fmt.Errorf("the body read from standard input exceeds %d bytes (64 KiB), the limit of one message; nothing was sent",
			mailwire.MaxBodyBytes)
	}
	return body, nil
}

func newMailInboxCommand(g *globalOptions) *cobra.Command {
	var unread, ack bool
	var limit int
	var after uint64
	var output string
	cmd := &cobra.Command{
		Use:   "inbox AGENT [--unread] [--ack] [--limit N] [--after SEQ]",
		Short: "List an agent's mail, oldest first; --ack marks the listed mail read",
		Long: "inbox lists a page of the agent's mail in the order it arrived (SEQ is its position in the log). " +
			"Reading marks nothing read: --ack advances the agent's read cursor to the last listed message, " +
			"exactly as the agent's own mail-inbox --ack does.",
		Example: "  aictl mail inbox coder --unread\n  aictl mail inbox coder --unread --ack\n  aictl mail inbox coder -o json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			agent := args[0]
			if limit < 1 || limit > mailwire.MaxLimit {
				return fmt.Errorf("mail inbox: --limit must be 1 to %d", mailwire.MaxLimit)
			}
			if output != "" && output != "json" && output != "yaml" {
				return fmt.Errorf("unknown output format %q: allowed formats are json, yaml (default: table)", output)
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			q := url.Values{mailwire.ParamLimit: {strconv.Itoa(limit)}}
			if unread {
				q.Set(mailwire.ParamUnread, "true")
			}
			if after > 0 {
				q.Set(mailwire.ParamAfter, strconv.FormatUint(after, 10))
			}
			path := client.ResourcePath("agents", g.ns(), agent, mailwire.SubInbox)
			data, err := cl.DoRaw(cmd.Context(), http.MethodGet, path+"?"+q.Encode(), "", nil)
			if err != nil {
				return &opError{op: "mail inbox " + agent, err: err}
			}
			var in mailwire.Inbox
			if err := json.Unmarshal(data, &in); err != nil {
				return fmt.Errorf("mail inbox %s: decoding the reply: %w", agent, err)
			}
			empty := "No mail for agent " + agent + "."
			if unread {
				empty = "No unread mail for agent " + agent + "."
			}
			if err := printReply(g.streams, output, in, len(in.Items), empty, func(w io.Writer) error { return printMail(w, in.Items) }); err != nil {
				return err
			}
			note := g.streams.Out
			if output != "" {
				note = g.streams.ErrOut // keep json/yaml parseable
			}
			if in.Next != 0 {
				fmt.Fprintf(g.streams.ErrOut, "more mail follows: --after %d\n", in.Next)
			}
			if !ack || len(in.Items) == 0 {
				return nil
			}
			upTo := in.Items[len(in.Items)-1].Seq
			body, _ := json.Marshal(mailwire.AckRequest{UpTo: upTo})
			data, err = cl.DoRaw(cmd.Context(), http.MethodPost, path+"/"+mailwire.InboxAck, "application/json", body)
			if err != nil {
				return &opError{op: "mail inbox " + agent + " --ack", err: err}
			}
			var acked mailwire.AckResponse
			if err := json.Unmarshal(data, &acked); err != nil {
				return fmt.Errorf("mail inbox %s --ack: decoding the reply: %w", agent, err)
			}
			fmt.Fprintf(note, "marked read up to %d; %d unread\n", acked.ReadCursor, acked.Unread)
			return nil
		},
	}
	cmd.Flags().BoolVar(&unread, "unread", false, "list only mail after the read cursor")
	cmd.Flags().BoolVar(&ack, "ack", false, "mark the listed mail read")
	cmd.Flags().IntVar(&limit, "limit", mailwire.DefaultLimit, fmt.Sprintf("messages per page (at most %d)", mailwire.MaxLimit))
	cmd.Flags().Uint64Var(&after, "after", 0, "list mail after this SEQ (the next page)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: table)")
	return cmd
}

func printMail(w io.Writer, items []mailwire.Mail) error {
	tw := newTabWriter(w)
	writeRow(tw, []string{"SEQ", "TIME", "FROM", "BODY"})
	for _, m := range items {
		writeRow(tw, []string{strconv.FormatUint(m.Seq, 10), m.Time.Local().Format("2006-01-02 15:04:05"), m.From,
			mailwire.FirstLine(m.Body, 80)})
	}
	return tw.Flush()
}
