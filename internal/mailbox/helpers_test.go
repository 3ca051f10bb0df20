package mailbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"aicli.dev/aicli/internal/mailbox"
	"aicli.dev/aicli/internal/store"
)

const ns = "team"

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func openStore(t testing.TB, dir string) *store.Store {
	t.Helper()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	return s
}

// open returns a mailbox on a fresh store in a temp dir, closed at cleanup.
func open(t testing.TB) (*mailbox.Mailbox, *store.Store, string) {
	t.Helper()
	dir := t.TempDir()
	s := openStore(t, dir)
	t.Cleanup(func() { _ = s.Close() })
	m, err := mailbox.Open(ctxT(t), s, mailbox.Options{})
	if err != nil {
		t.Fatalf("open mailbox: %v", err)
	}
	return m, s, dir
}

func send(t testing.TB, m *mailbox.Mailbox, from, to, body string) mailbox.Sent {
	t.Helper()
	s, err := m.Append(ctxT(t), mailbox.Message{Namespace: ns, From: from, To: to, Body: body})
	if err != nil {
		t.Fatalf("append %s→%s: %v", from, to, err)
	}
	return s
}

func inbox(t testing.TB, m *mailbox.Mailbox, agent string, opts mailbox.InboxOptions) []mailbox.Mail {
	t.Helper()
	got, err := m.Inbox(ctxT(t), ns, agent, opts)
	if err != nil {
		t.Fatalf("inbox %s: %v", agent, err)
	}
	return got
}

func unread(t testing.TB, m *mailbox.Mailbox, agent string) int {
	t.Helper()
	n, err := m.Unread(ctxT(t), ns, agent)
	if err != nil {
		t.Fatalf("unread %s: %v", agent, err)
	}
	return n
}

func bodies(ms []mailbox.Mail) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%s:%s", m.From, m.Body)
	}
	return out
}
