package mailbox_test

import (
	"fmt"
	"reflect"
	"testing"

	"aicli.dev/aicli/internal/mailbox"
)

// view is everything the projection answers for some agents.
type view map[string]struct {
	All, Unread []mailbox.Mail
	Cursor      uint64
	UnreadCount int
}

func snapshot(t *testing.T, m *mailbox.Mailbox, agents ...string) view {
	t.Helper()
	v := view{}
	for _, a := range agents {
		c, err := m.Cursor(ctxT(t), ns, a)
		if err != nil {
			t.Fatal(err)
		}
		e := v[a]
		e.All = inbox(t, m, a, mailbox.InboxOptions{})
		e.Unread = inbox(t, m, a, mailbox.InboxOptions{UnreadOnly: true})
		e.Cursor, e.UnreadCount = c, unread(t, m, a)
		v[a] = e
	}
	return v
}

func TestRebuildFromLogIsIdentical(t *testing.T) {
	m, s, dir := open(t)
	agents := []string{"alice", "bob", "carol"}
	for i := range 60 {
		from, to := agents[i%3], agents[(i+1+i/3)%3]
		if _, err := m.Append(ctxT(t), mailbox.Message{
			Namespace: ns, From: from, To: to, Body: fmt.Sprint(i),
			ConversationContext: "conv-" + from, IdempotencyKey: fmt.Sprint("k", i),
		}); err != nil {
			t.Fatal(err)
		}
		if i%7 == 6 {
			if _, err := m.Ack(ctxT(t), ns, to, ^uint64(0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(t, m, "bob", "alice", "unread tail")
	before := snapshot(t, m, agents...)
	if before["alice"].Cursor == 0 || before["alice"].UnreadCount == 0 {
		t.Fatalf("test needs both read and unread mail: %+v", before["alice"])
	}

	// Drop the projection and replay it from the log.
	if err := m.Rebuild(ctxT(t), ns); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, m, agents...); !reflect.DeepEqual(before, after) {
		t.Fatalf("rebuilt projection differs:\nbefore %+v\nafter  %+v", before, after)
	}
	// Idempotency keys are part of the rebuilt projection.
	if r, err := m.Append(ctxT(t), mailbox.Message{Namespace: ns, From: "alice", To: "bob", Body: "0", ConversationContext: "conv-alice", IdempotencyKey: "k0"}); err != nil || !r.Replayed {
		t.Fatalf("idempotency key lost by rebuild: %+v %v", r, err)
	}

	// A fresh process (Open replays every namespace) sees the same.
	_ = s.Close()
	s = openStore(t, dir)
	defer s.Close()
	m2, err := mailbox.Open(ctxT(t), s, mailbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, m2, agents...); !reflect.DeepEqual(before, after) {
		t.Fatalf("reopened projection differs:\nbefore %+v\nafter  %+v", before, after)
	}
}
