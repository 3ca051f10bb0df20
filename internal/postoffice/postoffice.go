// Package postoffice is the mailbox's command side with its permission: a
// send names a sender and a recipient agent of one namespace, the sender's
// peer policy and Grants are read from the store on every send (so an edit
// revokes at the next one), and only then is the message appended. The API
// (aictl mail) and the built-in mail tools both send through it.
package postoffice

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/mailbox"
	"aicli.dev/aicli/internal/storeclient"
)

// Office sends mail under the agents' peer permissions.
type Office struct {
	Client  *storeclient.Client
	Mailbox *mailbox.Mailbox
}

// Send is one send command.
type Send struct {
	Namespace, From, To string
	Body                string
	// ConversationContext says what the mail is about (the sending conversation).
	ConversationContext string
	// IdempotencyKey makes a retried send return the first result.
	IdempotencyKey string
}

// NoSuchAgentError is a send naming an agent that does not exist.
type NoSuchAgentError struct {
	Role, Namespace, Name string
}

func (e *NoSuchAgentError) Error() string {
	return fmt.Sprintf("%s agent %q does not exist in namespace %q", e.Role, e.Name, e.Namespace)
}

// Send checks the message, both agents and the permission, then appends the
// message (synced). Nothing is appended when any check fails: the error is a
// *mailbox.ValidationError (body), a *NoSuchAgentError or a
// *grants.PermissionError naming the missing permission.
func (o *Office) Send(ctx context.Context, s Send) (mailbox.Sent, error) {
	msg := mailbox.Message{Namespace: s.Namespace, From: s.From, To: s.To, Body: s.Body,
		ConversationContext: s.ConversationContext, IdempotencyKey: s.IdempotencyKey}
	if ns, name, ok := strings.Cut(s.To, "/"); ok {
		return mailbox.Sent{}, &grants.PermissionError{Missing: "namespace", Msg: fmt.Sprintf(
			"agent %q may not send mail to %s/%s: mail stays within one namespace (owner)", s.From, ns, name)}
	}
	if err := mailbox.Check(msg); err != nil {
		return mailbox.Sent{}, err
	}
	sender, err := o.agent(ctx, "sender", s.Namespace, s.From)
	if err != nil {
		return mailbox.Sent{}, err
	}
	recipient, err := o.agent(ctx, "recipient", s.Namespace, s.To)
	if err != nil {
		return mailbox.Sent{}, err
	}
	var all v1alpha1.GrantList
	if err := o.Client.List(ctx, s.Namespace, &all, nil); err != nil {
		return mailbox.Sent{}, err
	}
	if err := grants.MaySend(sender, recipient, all.Items); err != nil {
		return mailbox.Sent{}, err
	}
	return o.Mailbox.Append(ctx, msg)
}

// Recipients lists the agents agent may send mail to.
func (o *Office) Recipients(ctx context.Context, ns, agent string) ([]string, error) {
	sender, err := o.agent(ctx, "sender", ns, agent)
	if err != nil {
		return nil, err
	}
	var agents v1alpha1.AgentList
	if err := o.Client.List(ctx, ns, &agents, nil); err != nil {
		return nil, err
	}
	var all v1alpha1.GrantList
	if err := o.Client.List(ctx, ns, &all, nil); err != nil {
		return nil, err
	}
	return grants.Recipients(sender, agents.Items, all.Items), nil
}

func (o *Office) agent(ctx context.Context, role, ns, name string) (*v1alpha1.Agent, error) {
	a := &v1alpha1.Agent{}
	err := o.Client.Get(ctx, ns, name, a)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && a.DeletionTimestamp != nil):
		return nil, &NoSuchAgentError{Role: role, Namespace: ns, Name: name}
	case err != nil:
		return nil, err
	}
	return a, nil
}

// IsRefusal reports whether err is a refused send (bad input, unknown agent,
// missing permission) rather than a failure of the supervisor.
func IsRefusal(err error) bool {
	var v *mailbox.ValidationError
	var n *NoSuchAgentError
	var p *grants.PermissionError
	return errors.As(err, &v) || errors.As(err, &n) || errors.As(err, &p)
}
