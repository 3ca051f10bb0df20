package remote

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/convapi/wire"
	"aicli.dev/aicli/internal/monitor"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// Side is one remote namespace of one remote supervisor, reached through its
// public API. It implements monitor.TargetSide.
type Side struct {
	c       *client.Client
	ns      string
	address string
	log     *slog.Logger
}

var _ monitor.TargetSide = (*Side)(nil)

// Address is the remote supervisor's API address.
func (s *Side) Address() string { return s.address }

// Namespace is the remote namespace.
func (s *Side) Namespace() string { return s.ns }

// Follow streams the conversation's transcript from from on. When the
// stream breaks or the supervisor is unreachable it reconnects with backoff
// from one past the last entry it delivered, until ctx ends; entries are
// delivered once each, in cursor order.
func (s *Side) Follow(ctx context.Context, c monitor.TargetConversation, from int64) (<-chan transcriptwire.Entry, error) {
	ch := make(chan transcriptwire.Entry, 64)
	var failing atomic.Bool
	go func() {
		defer close(ch)
		_ = s.c.FollowTranscript(ctx, s.ns, c.Name, from, func(e transcriptwire.Entry) error {
			if failing.Swap(false) {
				s.log.Info("monitor: remote transcript follow resumed", "address", s.address, "namespace", s.ns, "conversation", c.Name,
					"cursor", e.Cursor)
			}
			select {
			case ch <- e:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, func(err error) bool {
			if !failing.Swap(true) {
				s.log.Warn("monitor: remote transcript follow failed; retrying", "address", s.address, "namespace", s.ns,
					"conversation", c.Name, "err", err)
			}
			return true
		})
	}()
	return ch, nil
}

// Last is the cursor of the conversation's last committed entry (0: none):
// one read of the last entry (?before=0). A reply whose only entry is cursor 1
// may come from a supervisor that predates ?before and read from the start,
// so then the transcript is paged through.
func (s *Side) Last(ctx context.Context, c monitor.TargetConversation) (int64, error) {
	tail, err := s.c.TranscriptBefore(ctx, s.ns, c.Name, 0, 1)
	if err != nil {
		return 0, err
	}
	if len(tail.Items) == 0 {
		return 0, nil
	}
	if last := tail.Items[len(tail.Items)-1].Cursor; last > 1 || tail.PrevCursor != 0 {
		return last, nil
	}
	var last int64
	next := int64(1)
	for {
		page, err := s.c.TranscriptPage(ctx, s.ns, c.Name, next, wire.MaxTranscriptLimit)
		if err != nil {
			return 0, err
		}
		if len(page.Items) == 0 || page.NextCursor <= next {
			return last, nil
		}
		last, next = page.Items[len(page.Items)-1].Cursor, page.NextCursor
	}
}

// Read returns up to limit entries with Cursor >= from.
func (s *Side) Read(ctx context.Context, c monitor.TargetConversation, from int64, limit int) ([]transcriptwire.Entry, error) {
	page, err := s.c.TranscriptPage(ctx, s.ns, c.Name, from, limit)
	if err != nil {
		return nil, err
	}
	return page.Items, nil
}

// Inject sends text as monitor's advice (the remote supervisor prefixes and
// attributes it). A conversation that is not live is the server's 409.
func (s *Side) Inject(ctx context.Context, c monitor.TargetConversation, monitor, text string) error {
	return s.c.SendAdvice(ctx, s.ns, c.Name, monitor, text)
}

// Pause sets an Active conversation's spec.desiredState to Paused.
func (s *Side) Pause(ctx context.Context, c monitor.TargetConversation) error {
	conv, err := s.conversation(ctx, c.Name)
	if err != nil {
		return err
	}
	if conv.Spec.DesiredState != v1alpha1.ConversationActive {
		return nil
	}
	patch := fmt.Appendf(nil, `{"spec":{"desiredState":%q}}`, v1alpha1.ConversationPaused)
	_, err = s.c.Patch(ctx, "conversations", s.ns, c.Name, patch, client.WriteOptions{})
	return err
}

func (s *Side) conversation(ctx context.Context, name string) (*v1alpha1.Conversation, error) {
	obj, err := s.c.Get(ctx, "conversations", s.ns, name)
	if err != nil {
		return nil, err
	}
	conv := &v1alpha1.Conversation{}
	return conv, client.ToTyped(obj, conv)
}

// Agent checks that agent name exists (the server's NotFound when not).
func (s *Side) Agent(ctx context.Context, name string) error {
	_, err := s.c.Get(ctx, "agents", s.ns, name)
	return err
}

// Conversations lists the conversations of agent (the remote catalog).
func (s *Side) Conversations(ctx context.Context, agent string) ([]v1alpha1.Conversation, error) {
	list, err := s.c.List(ctx, "conversations", s.ns, client.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []v1alpha1.Conversation
	for i := range list.Items {
		conv := v1alpha1.Conversation{}
		if err := client.ToTyped(&list.Items[i], &conv); err != nil {
			return nil, err
		}
		if conv.Spec.AgentRef == agent {
			out = append(out, conv)
		}
	}
	return out, nil
}
