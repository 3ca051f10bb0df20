package mailbox_test

import (
	"reflect"
	"sync"
	"testing"

	"aicli.dev/aicli/internal/mailbox"
)

func TestInboxNewestKeepsTheLastPage(t *testing.T) {
	m, _, _ := open(t)
	for _, b := range []string{"1", "2", "3", "4"} {
		send(t, m, "alice", "bob", b)
	}
	got := bodies(inbox(t, m, "bob", mailbox.InboxOptions{Limit: 2, Newest: true}))
	if want := []string{"alice:3", "alice:4"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("newest 2 = %v, want %v", got, want)
	}
	if got := bodies(inbox(t, m, "bob", mailbox.InboxOptions{Limit: 2})); !reflect.DeepEqual(got, []string{"alice:1", "alice:2"}) {
		t.Fatalf("oldest 2 = %v", got)
	}
}

func TestChangedIsToldOfAppendsAndAdvancesOnly(t *testing.T) {
	var mu sync.Mutex
	var told []string
	s := openStore(t, t.TempDir())
	t.Cleanup(func() { _ = s.Close() })
	var m *mailbox.Mailbox
	m, err := mailbox.Open(ctxT(t), s, mailbox.Options{Changed: func(ns, agent string) {
		// Called outside the locks: reading the mailbox here must not deadlock.
		n, _ := m.Unread(ctxT(t), ns, agent)
		mu.Lock()
		defer mu.Unlock()
		told = append(told, agent+":"+string(rune('0'+n)))
	}})
	if err != nil {
		t.Fatal(err)
	}
	sent := send(t, m, "alice", "bob", "hi")
	if _, err := m.Append(ctxT(t), mailbox.Message{Namespace: ns, From: "alice", To: "bob", Body: "again", IdempotencyKey: "k"}); err != nil {
		t.Fatal(err)
	}
	// A retried append (same key) appends nothing and tells nobody.
	if _, err := m.Append(ctxT(t), mailbox.Message{Namespace: ns, From: "alice", To: "bob", Body: "again", IdempotencyKey: "k"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Ack(ctxT(t), ns, "bob", sent.Seq); err != nil {
		t.Fatal(err)
	}
	// Acking the same position again writes nothing and tells nobody.
	if _, err := m.Ack(ctxT(t), ns, "bob", sent.Seq); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"bob:1", "bob:2", "bob:1"}; !reflect.DeepEqual(told, want) {
		t.Fatalf("told %v, want %v", told, want)
	}
}
