package controllers

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/mailbox"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/storeclient"
)

// TestAgentShowsUnreadMail: status.inboxUnread follows appends and read-advances through the mailbox's change hook.
func TestAgentShowsUnreadMail(t *testing.T) {
	dir := layout.Dir(t.TempDir())
	st, err := store.Open(dir.Store(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); st.Close() })
	hook := &ChangeHook{}
	mb, err := mailbox.Open(ctx, st, mailbox.Options{Changed: hook.Fire})
	if err != nil {
		t.Fatal(err)
	}
	if err := Start(ctx, Options{Store: st, DataDir: dir, SupervisorID: "sup-test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		SkipNameValidation: true, Mail: mb, MailChanged: hook}); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: st, client: storeclient.New(st), dir: dir}
	h.create("agents", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake"}}`)
	unread := func(n int32) func() bool {
		return func() bool {
			a := h.agent("a")
			return a != nil && a.Status.ObservedGeneration == 1 && a.Status.InboxUnread == n
		}
	}
	h.eventually("agent reconciled", unread(0))
	var last uint64
	for _, body := range []string{"one", "two", "three"} {
		s, err := mb.Append(ctx, mailbox.Message{Namespace: "default", From: "x", To: "a", Body: body})
		if err != nil {
			t.Fatal(err)
		}
		last = s.Seq
	}
	h.eventually("inboxUnread 3", unread(3))
	if _, err := mb.Ack(ctx, "default", "a", last); err != nil {
		t.Fatal(err)
	}
	h.eventually("inboxUnread 0 after the ack", unread(0))
}
