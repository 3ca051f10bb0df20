package mailbox_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/mailbox"
)

func TestAppendOrdersPerNamespace(t *testing.T) {
	m, _, _ := open(t)
	a1 := send(t, m, "alice", "bob", "one")
	c1 := send(t, m, "carol", "bob", "two")
	send(t, m, "alice", "carol", "elsewhere")
	a2 := send(t, m, "alice", "bob", "three")
	if !(a1.Seq < c1.Seq && c1.Seq < a2.Seq) {
		t.Fatalf("sequences not increasing: %d %d %d", a1.Seq, c1.Seq, a2.Seq)
	}
	if a2.Time.Before(a1.Time) {
		t.Fatalf("timestamp went back: %v then %v", a1.Time, a2.Time)
	}
	got := inbox(t, m, "bob", mailbox.InboxOptions{})
	want := []string{"alice:one", "carol:two", "alice:three"}
	if !reflect.DeepEqual(bodies(got), want) {
		t.Fatalf("bob's inbox = %v, want %v", bodies(got), want)
	}
	if got[0].Seq != a1.Seq || !got[0].Time.Equal(a1.Time) || got[0].To != "bob" {
		t.Fatalf("inbox entry %+v does not match sent %+v", got[0], a1)
	}
	page := inbox(t, m, "bob", mailbox.InboxOptions{After: a1.Seq, Limit: 1})
	if !reflect.DeepEqual(bodies(page), []string{"carol:two"}) {
		t.Fatalf("page after %d = %v", a1.Seq, bodies(page))
	}
	if n := unread(t, m, "nobody"); n != 0 {
		t.Fatalf("unknown agent unread = %d", n)
	}
}

func TestAppendValidationNamesTheField(t *testing.T) {
	m, s, _ := open(t)
	ok := mailbox.Message{Namespace: ns, From: "alice", To: "bob", Body: "hi"}
	cases := []struct {
		field string
		edit  func(*mailbox.Message)
	}{
		{"namespace", func(m *mailbox.Message) { m.Namespace = "" }},
		{"namespace", func(m *mailbox.Message) { m.Namespace = "Team/x" }},
		{"from", func(m *mailbox.Message) { m.From = "" }},
		{"from", func(m *mailbox.Message) { m.From = "Alice_1" }},
		{"to", func(m *mailbox.Message) { m.To = "" }},
		{"to", func(m *mailbox.Message) { m.To = strings.Repeat("b", 64) }},
		{"body", func(m *mailbox.Message) { m.Body = "" }},
		{"body", func(m *mailbox.Message) { m.Body = strings.Repeat("x", mailbox.MaxBodyBytes+1) }},
		{"conversationContext", func(m *mailbox.Message) { m.ConversationContext = strings.Repeat("c", mailbox.MaxContextBytes+1) }},
		{"idempotencyKey", func(m *mailbox.Message) { m.IdempotencyKey = strings.Repeat("k", mailbox.MaxIdempotencyKeyBytes+1) }},
	}
	for _, c := range cases {
		msg := ok
		c.edit(&msg)
		_, err := m.Append(ctxT(t), msg)
		var ve *mailbox.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: err = %v, want a ValidationError naming %q", c.field, err, c.field)
		}
	}
	if _, err := m.Append(ctxT(t), mailbox.Message{Namespace: ns, From: "alice", To: "bob", Body: strings.Repeat("x", mailbox.MaxBodyBytes)}); err != nil {
		t.Fatalf("body of exactly the limit refused: %v", err)
	}
	kvs, err := s.ScanKV(ctxT(t), "mailbox", "", "", 0)
	if err != nil || len(kvs) != 1 {
		t.Fatalf("log holds %d records (%v), want only the valid one", len(kvs), err)
	}
}

func TestAppendIdempotencyKey(t *testing.T) {
	m, s, dir := open(t)
	msg := mailbox.Message{Namespace: ns, From: "alice", To: "bob", Body: "once", IdempotencyKey: "k1"}
	first, err := m.Append(ctxT(t), msg)
	if err != nil {
		t.Fatal(err)
	}
	again, err := m.Append(ctxT(t), msg)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.Seq != first.Seq || !again.Time.Equal(first.Time) {
		t.Fatalf("retry = %+v, want the first result %+v replayed", again, first)
	}
	// The same key from another sender is another message.
	other := msg
	other.From = "carol"
	if s2, err := m.Append(ctxT(t), other); err != nil || s2.Replayed {
		t.Fatalf("same key, other sender: %+v %v", s2, err)
	}
	changed := msg
	changed.Body = "different"
	if _, err := m.Append(ctxT(t), changed); !errors.Is(err, mailbox.ErrIdempotencyConflict) {
		t.Fatalf("reused key for another body: %v", err)
	}
	if n := len(inbox(t, m, "bob", mailbox.InboxOptions{})); n != 2 {
		t.Fatalf("bob has %d messages, want 2", n)
	}
	// The key survives a restart (it is replayed from the log).
	_ = s.Close()
	s = openStore(t, dir)
	defer s.Close()
	m, err = mailbox.Open(ctxT(t), s, mailbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := m.Append(ctxT(t), msg)
	if err != nil || !after.Replayed || after.Seq != first.Seq || !after.Time.Equal(first.Time) {
		t.Fatalf("retry after restart = %+v %v, want %+v", after, err, first)
	}
}

func TestAckCursorNeverMovesBack(t *testing.T) {
	m, _, _ := open(t)
	var sent []mailbox.Sent
	for i := range 5 {
		sent = append(sent, send(t, m, "alice", "bob", fmt.Sprint(i)))
	}
	send(t, m, "alice", "carol", "not bob's")
	ack := func(upTo uint64) uint64 {
		t.Helper()
		c, err := m.Ack(ctxT(t), ns, "bob", upTo)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := ack(sent[2].Seq); c != sent[2].Seq || unread(t, m, "bob") != 2 {
		t.Fatalf("ack 3rd: cursor %d unread %d", c, unread(t, m, "bob"))
	}
	if c := ack(sent[0].Seq); c != sent[2].Seq {
		t.Fatalf("ack backwards moved the cursor to %d", c)
	}
	if got := bodies(inbox(t, m, "bob", mailbox.InboxOptions{UnreadOnly: true})); !reflect.DeepEqual(got, []string{"alice:3", "alice:4"}) {
		t.Fatalf("unread = %v", got)
	}
	// Reading again shows the same unread messages (at-least-once display).
	if n := len(inbox(t, m, "bob", mailbox.InboxOptions{UnreadOnly: true})); n != 2 {
		t.Fatalf("second read shows %d", n)
	}
	// Acking past the end stops at bob's last message: later mail stays unread.
	if c := ack(1 << 40); c != sent[4].Seq {
		t.Fatalf("ack past the end: cursor %d, want %d", c, sent[4].Seq)
	}
	send(t, m, "alice", "bob", "late")
	if n := unread(t, m, "bob"); n != 1 {
		t.Fatalf("unread after late mail = %d", n)
	}
}

func TestFloodOfTenThousandInOrder(t *testing.T) {
	m, _, _ := open(t)
	const n = 10000
	senders := []string{"alice", "carol", "dave"}
	errs := make(chan error, len(senders))
	for _, from := range senders {
		go func() {
			for i := range n / len(senders) {
				if _, err := m.Append(ctxT(t), mailbox.Message{Namespace: ns, From: from, To: "bob", Body: fmt.Sprint(i)}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range senders {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := inbox(t, m, "bob", mailbox.InboxOptions{UnreadOnly: true})
	if len(got) != n/len(senders)*len(senders) {
		t.Fatalf("bob has %d messages", len(got))
	}
	next := map[string]int{}
	for i, msg := range got {
		if i > 0 && msg.Seq <= got[i-1].Seq {
			t.Fatalf("out of sequence order at %d", i)
		}
		if msg.Body != fmt.Sprint(next[msg.From]) {
			t.Fatalf("from %s: got %q, want %d (per-sender order)", msg.From, msg.Body, next[msg.From])
		}
		next[msg.From]++
	}
}
