package controllers

import (
	"context"

	"aicli.dev/aicli/apis/v1alpha1"
)

// AgentMail counts an agent's unread mail (mailbox.Mailbox).
type AgentMail interface {
	Unread(ctx context.Context, ns, agent string) (int, error)
}

// observeMail copies the agent's unread count into status.inboxUnread (an
// observation; the mailbox owns the state and re-triggers the agent on every
// append or read-advance). An unreadable mailbox leaves the last observation.
func (r *AgentReconciler) observeMail(ctx context.Context, agent *v1alpha1.Agent) {
	if r.Mail == nil {
		return
	}
	n, err := r.Mail.Unread(ctx, agent.Namespace, agent.Name)
	if err != nil {
		r.Logger.Warn("reading the agent's unread mail", "namespace", agent.Namespace, "agent", agent.Name, "err", err)
		return
	}
	agent.Status.InboxUnread = int32(min(n, 1<<31-1))
}
