package builtins

import (
	"context"
	"errors"
	"strings"

	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/mailbox"
	"aicli.dev/aicli/internal/postoffice"
)

// Office sends mail under the peer permissions (postoffice.Office).
type Office interface {
	Send(ctx context.Context, s postoffice.Send) (mailbox.Sent, error)
	Recipients(ctx context.Context, ns, agent string) ([]string, error)
}

// Mailbox reads and advances inboxes (mailbox.Mailbox).
type Mailbox interface {
	Inbox(ctx context.Context, ns, agent string, opts mailbox.InboxOptions) ([]mailbox.Mail, error)
	Ack(ctx context.Context, ns, agent string, upTo uint64) (uint64, error)
	Unread(ctx context.Context, ns, agent string) (int, error)
}

// Inbox page sizes.
const (
	defaultInboxLimit = 20
	maxInboxLimit     = 200
)

// mailSend is `mail-send PEER [TEXT…]` (the body from stdin without TEXT).
func (c *call) mailSend(ctx context.Context, raw []string) error {
	if c.s.Office == nil {
		return fail(exitFailed, "this supervisor serves no mailbox")
	}
	a, err := parse(raw, nil)
	if err != nil {
		return err
	}
	if len(a.pos) == 0 {
		return fail(exitUsage, "usage: mail-send PEER [TEXT…] (the text from stdin when none is given)")
	}
	body, err := c.text(a, 1, mailbox.MaxBodyBytes, "message")
	if err != nil {
		return err
	}
	sent, err := c.s.Office.Send(ctx, postoffice.Send{Namespace: c.auth.Namespace, From: c.auth.Agent, To: a.pos[0],
		Body: body, ConversationContext: c.auth.Conversation})
	var perm *grants.PermissionError
	switch {
	case errors.As(err, &perm):
		return fail(exitRefused, "refused: %v; nothing was sent", err)
	case postoffice.IsRefusal(err):
		return fail(exitFailed, "%v; nothing was sent", err)
	case err != nil:
		return err
	}
	c.printf("sent to %s (message #%d)\n", a.pos[0], sent.Seq)
	return nil
}

// mailInbox is `mail-inbox [--unread] [--ack] [--limit N] [--after SEQ]`: the
// newest messages (or the oldest unread ones), with --ack marking what was
// listed as read.
func (c *call) mailInbox(ctx context.Context, raw []string) error {
	if c.s.Mailbox == nil {
		return fail(exitFailed, "this supervisor serves no mailbox")
	}
	a, err := parse(raw, map[string]bool{"unread": false, "ack": false, "limit": true, "after": true})
	if err != nil {
		return err
	}
	if len(a.pos) > 0 {
		return fail(exitUsage, "usage: mail-inbox [--unread] [--ack] [--limit N] [--after SEQ]")
	}
	limit, err := a.num("limit", defaultInboxLimit, maxInboxLimit)
	if err != nil {
		return err
	}
	after, err := a.seq("after")
	if err != nil {
		return err
	}
	ns, me := c.auth.Namespace, c.auth.Agent
	unread := a.has("unread")
	mails, err := c.s.Mailbox.Inbox(ctx, ns, me, mailbox.InboxOptions{
		UnreadOnly: unread, After: after, Limit: int(limit), Newest: !unread && !a.has("after"),
	})
	if err != nil {
		return err
	}
	for _, m := range mails {
		about := ""
		if m.ConversationContext != "" {
			about = " (from conversation " + m.ConversationContext + ")"
		}
		c.printf("[#%d %s] from %q%s:\n%s\n\n", m.Seq, m.Time.UTC().Format("2006-01-02 15:04:05Z"), m.From, about,
			strings.TrimRight(m.Body, "\n"))
	}
	if a.has("ack") && len(mails) > 0 {
		if _, err := c.s.Mailbox.Ack(ctx, ns, me, mails[len(mails)-1].Seq); err != nil {
			return err
		}
	}
	left, err := c.s.Mailbox.Unread(ctx, ns, me)
	if err != nil {
		return err
	}
	switch {
	case len(mails) == 0 && unread:
		c.printf("no unread mail\n")
	case len(mails) == 0:
		c.printf("no mail\n")
	case a.has("ack"):
		c.printf("%d shown and marked read up to #%d; %d unread left\n", len(mails), mails[len(mails)-1].Seq, left)
	default:
		c.printf("%d shown; %d unread (mail-inbox --unread --ack reads and marks them)\n", len(mails), left)
	}
	return nil
}

// mailPeers is `mail-peers`: whom the agent may send mail to.
func (c *call) mailPeers(ctx context.Context, raw []string) error {
	if c.s.Office == nil {
		return fail(exitFailed, "this supervisor serves no mailbox")
	}
	if len(raw) > 0 {
		return fail(exitUsage, "usage: mail-peers")
	}
	peers, err := c.s.Office.Recipients(ctx, c.auth.Namespace, c.auth.Agent)
	if err != nil {
		return err
	}
	if len(peers) == 0 {
		c.printf("you may not send mail to anyone (agent %q's spec.peers.sendTo allows no one)\n", c.auth.Agent)
		return nil
	}
	c.printf("%s\n", strings.Join(peers, "\n"))
	return nil
}
