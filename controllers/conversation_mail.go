package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/mailbox"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// Mailbox is the agents' mailbox as the conversation reconciler reads and
// advances it (mailbox.Mailbox).
type Mailbox interface {
	AgentMail
	Inbox(ctx context.Context, ns, agent string, opts mailbox.InboxOptions) ([]mailbox.Mail, error)
	Ack(ctx context.Context, ns, agent string, upTo uint64) (uint64, error)
}

// Bounds of one mail delivery: a chunk is the next unread messages of one
// sender, at most MailChunkMessages of them and MailChunkBytes of bodies (a
// single larger message, up to 64 KiB, goes alone), sent as one message.
const (
	MailChunkMessages = 20
	MailChunkBytes    = 16 << 10
	// mailNoticePage is how many unread messages one read scans to name the senders of a notice.
	mailNoticePage = 1000
)

// MailPrefix formats one delivered message: `[Mail from agent "a"]: body`.
func MailPrefix(from string) string { return fmt.Sprintf("[Mail from agent %q]: ", from) }

// reconcileMail owns MailDelivered: while the conversation is live, its CLI
// IDLE and its budget covers a message, it delivers the agent's next chunk of
// unread mail as one atomic message spoken by mail:<sender> and then marks
// the chunk read (the explicit read-advance); the next chunk goes at the next
// IDLE. With spec.peers.delivery NotifyOnly it sends a one-line notice per new
// arrival instead and marks nothing read. Mail never starts a conversation.
func (r *ConversationReconciler) reconcileMail(ctx context.Context, s *convScope) (reconcile.Result, error) {
	conv := s.conv
	uid := string(conv.UID)
	if r.Mail == nil || s.agent == nil {
		meta.RemoveStatusCondition(&conv.Status.Conditions, v1alpha1.ConditionMailDelivered)
		return reconcile.Result{}, nil
	}
	if s.stop || s.pty == nil {
		r.notified.forget(uid)
		reason, _ := s.stoppedReason()
		s.set(v1alpha1.ConditionMailDelivered, metav1.ConditionFalse, reason, "no run: mail waits in the agent's inbox for a live conversation")
		return reconcile.Result{}, nil
	}
	ns, agent := conv.Namespace, s.agent.Name
	unread, err := r.Mail.Unread(ctx, ns, agent)
	if err != nil {
		return reconcile.Result{}, transient(v1alpha1.ReasonRetrying, fmt.Errorf("reading the agent's inbox: %w", err))
	}
	notifyOnly := s.agent.Spec.Peers != nil && s.agent.Spec.Peers.Delivery == v1alpha1.MailNotifyOnly
	switch {
	case unread == 0:
		r.notified.forget(uid)
		s.set(v1alpha1.ConditionMailDelivered, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "no unread mail")
		return reconcile.Result{}, nil
	case s.budgetShort != "":
		s.set(v1alpha1.ConditionMailDelivered, metav1.ConditionFalse, v1alpha1.ReasonBudgetWait,
			fmt.Sprintf("%d unread message(s) wait: %s", unread, s.budgetShort))
		return reconcile.Result{}, nil
	case notifyOnly:
		return reconcile.Result{}, r.notifyMail(ctx, s, unread)
	case !idleNow(s):
		// The guest's next status change (IDLE) triggers the next pass.
		s.set(v1alpha1.ConditionMailDelivered, metav1.ConditionFalse, v1alpha1.ReasonMailPending,
			fmt.Sprintf("%d unread message(s) wait for the CLI to be IDLE (it is %s)", unread, execution(s)))
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, r.deliverMail(ctx, s, unread)
}

// deliverMail sends the next chunk and acknowledges it once the guest accepted it.
func (r *ConversationReconciler) deliverMail(ctx context.Context, s *convScope, unread int) error {
	conv, uid := s.conv, string(s.conv.UID)
	ns, agent := conv.Namespace, s.agent.Name
	mails, err := r.Mail.Inbox(ctx, ns, agent, mailbox.InboxOptions{UnreadOnly: true, Limit: MailChunkMessages})
	if err != nil {
		return transient(v1alpha1.ReasonRetrying, fmt.Errorf("reading the agent's inbox: %w", err))
	}
	if len(mails) == 0 { // read concurrently (mail-inbox --ack)
		s.set(v1alpha1.ConditionMailDelivered, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "no unread mail")
		return nil
	}
	chunk := mailChunk(mails)
	from := chunk[0].From
	text := formatMailChunk(chunk)
	if r.Attribution != nil {
		r.Attribution.Expect(uid, transcriptwire.SpeakerMailPrefix+from, text)
	}
	if err := s.pty.SendMessage(ctx, text); err != nil {
		// Nothing was marked read: the chunk goes again at the next attempt.
		return transient(v1alpha1.ReasonRetrying, fmt.Errorf("delivering %d message(s) from %q: %w", len(chunk), from, err))
	}
	r.markSent(s)
	last := chunk[len(chunk)-1].Seq
	if _, err := r.Mail.Ack(ctx, ns, agent, last); err != nil {
		// Delivered but not marked read: shown again at the next IDLE (at-least-once display).
		return transient(v1alpha1.ReasonRetrying, fmt.Errorf("marking delivered mail read up to %d: %w", last, err))
	}
	if left := unread - len(chunk); left > 0 {
		s.set(v1alpha1.ConditionMailDelivered, metav1.ConditionFalse, v1alpha1.ReasonMailPending,
			fmt.Sprintf("delivered %d message(s) from %q; %d more wait for the next IDLE", len(chunk), from, left))
		return nil
	}
	s.set(v1alpha1.ConditionMailDelivered, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("delivered %d message(s) from %q; no unread mail", len(chunk), from))
	return nil
}

// notifyMail sends one notice when mail arrived since the last notice.
func (r *ConversationReconciler) notifyMail(ctx context.Context, s *convScope, unread int) error {
	conv, uid := s.conv, string(s.conv.UID)
	ns, agent := conv.Namespace, s.agent.Name
	done := func() {
		s.set(v1alpha1.ConditionMailDelivered, metav1.ConditionTrue, v1alpha1.ReasonMailNotified,
			fmt.Sprintf("%d unread message(s); the agent was told to read them with mail-inbox", unread))
	}
	seen := r.notified.get(uid)
	fresh, err := r.Mail.Inbox(ctx, ns, agent, mailbox.InboxOptions{UnreadOnly: true, After: seen, Limit: 1})
	if err != nil {
		return transient(v1alpha1.ReasonRetrying, fmt.Errorf("reading the agent's inbox: %w", err))
	}
	switch {
	case len(fresh) == 0:
		done()
		return nil
	case !idleNow(s):
		s.set(v1alpha1.ConditionMailDelivered, metav1.ConditionFalse, v1alpha1.ReasonMailPending,
			fmt.Sprintf("a notice of %d unread message(s) waits for the CLI to be IDLE (it is %s)", unread, execution(s)))
		return nil
	}
	senders, last, err := r.unreadSenders(ctx, ns, agent)
	if err != nil {
		return transient(v1alpha1.ReasonRetrying, fmt.Errorf("reading the agent's inbox: %w", err))
	}
	notice := mailNotice(unread, senders)
	if r.Attribution != nil {
		r.Attribution.Expect(uid, transcriptwire.SpeakerMailPrefix+senders[0], notice)
	}
	if err := s.pty.SendMessage(ctx, notice); err != nil {
		return transient(v1alpha1.ReasonRetrying, fmt.Errorf("delivering a mail notice: %w", err))
	}
	r.markSent(s)
	r.notified.set(uid, last)
	done()
	return nil
}

// unreadSenders lists the senders of the unread mail in order of first
// appearance, scanning at most mailNoticePage messages, and the last unread sequence.
func (r *ConversationReconciler) unreadSenders(ctx context.Context, ns, agent string) ([]string, uint64, error) {
	var senders []string
	var last uint64
	for after := uint64(0); ; {
		page, err := r.Mail.Inbox(ctx, ns, agent, mailbox.InboxOptions{UnreadOnly: true, After: after, Limit: mailNoticePage})
		if err != nil {
			return nil, 0, err
		}
		for _, m := range page {
			if !slices.Contains(senders, m.From) {
				senders = append(senders, m.From)
			}
			last = m.Seq
		}
		if len(page) < mailNoticePage {
			return senders, last, nil
		}
		after = last
	}
}

// idleNow reports whether the CLI is IDLE and got nothing yet this pass.
func idleNow(s *convScope) bool {
	return !s.sent && s.conv.Status.Execution == v1alpha1.ExecutionStatus(ptyapi.StatusIdle)
}

func execution(s *convScope) string {
	if s.sent {
		return string(ptyapi.StatusBusy)
	}
	return string(s.conv.Status.Execution)
}

// markSent records that the CLI got a message this pass: it is BUSY now,
// and the live-guest registry (when it can) shows so until the guest says.
func (r *ConversationReconciler) markSent(s *convScope) {
	s.sent = true
	s.conv.Status.Execution = v1alpha1.ExecutionStatus(ptyapi.StatusBusy)
	if m, ok := r.Guests.(interface{ MarkBusy(uid string) }); ok {
		m.MarkBusy(string(s.conv.UID))
	}
}

// mailChunk is the longest prefix of mails from the first one's sender within
// the chunk bounds (at least one message).
func mailChunk(mails []mailbox.Mail) []mailbox.Mail {
	size := 0
	for i, m := range mails {
		size += len(m.Body)
		if i > 0 && (m.From != mails[0].From || i == MailChunkMessages || size > MailChunkBytes) {
			return mails[:i]
		}
	}
	return mails[:min(len(mails), MailChunkMessages)]
}

// formatMailChunk is the text of one delivery: each message with its prefix,
// separated by a blank line. Each body is transcriptwire.Framed: its lines
// after the first are indented, so a body cannot start a line with a header
// and pose as mail from another sender (or as advice).
func formatMailChunk(chunk []mailbox.Mail) string {
	var b strings.Builder
	for i, m := range chunk {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(transcriptwire.Framed(MailPrefix(m.From), m.Body))
	}
	return b.String()
}

// mailNotice is the NotifyOnly line: `[Mail: N unread messages from "a", "b"; read them with mail-inbox]`.
func mailNotice(unread int, senders []string) string {
	quoted := make([]string, len(senders))
	for i, s := range senders {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	noun := "messages"
	if unread == 1 {
		noun = "message"
	}
	// No body: the senders are agent names (DNS-1123 labels); framed like every platform message all the same.
	return transcriptwire.Framed(fmt.Sprintf("[Mail: %d unread %s from %s; read them with mail-inbox]", unread, noun, strings.Join(quoted, ", ")), "")
}

// notifiedMail is, per conversation uid, the last mail sequence a notice
// covered. It lives in memory: after a supervisor restart a live conversation
// with unread mail is told once more.
type notifiedMail struct {
	mu  sync.Mutex
	seq map[string]uint64
}

func (n *notifiedMail) get(uid string) uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.seq[uid]
}

func (n *notifiedMail) set(uid string, seq uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seq == nil {
		n.seq = map[string]uint64{}
	}
	n.seq[uid] = seq
}

func (n *notifiedMail) forget(uid string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.seq, uid)
}
