package mailbox_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"aicli.dev/aicli/internal/mailbox"
	"aicli.dev/aicli/internal/store"
)

// flakyStore fails the next PutKV after writing it (an acknowledgement lost
// although the write landed, as after a cancelled wait).
type flakyStore struct {
	*store.Store
	failNext bool
}

func (f *flakyStore) PutKV(ctx context.Context, bucket, key string, val []byte) error {
	err := f.Store.PutKV(ctx, bucket, key, val)
	if f.failNext {
		f.failNext = false
		return errors.New("injected: acknowledgement lost")
	}
	return err
}

func TestFailedWriteReloadsTheProjection(t *testing.T) {
	_, s, _ := open(t)
	fs := &flakyStore{Store: s}
	m, err := mailbox.Open(ctxT(t), fs, mailbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	send(t, m, "alice", "bob", "one")
	fs.failNext = true
	msg := mailbox.Message{Namespace: ns, From: "alice", To: "bob", Body: "two", IdempotencyKey: "k2"}
	if _, err := m.Append(ctxT(t), msg); err == nil {
		t.Fatal("append with a failed write reported success")
	}
	// The retry finds the write that did land: appended once, not twice, and
	// no sequence number is reused.
	r, err := m.Append(ctxT(t), msg)
	if err != nil || !r.Replayed {
		t.Fatalf("retry after a lost acknowledgement = %+v %v, want the landed write replayed", r, err)
	}
	three := send(t, m, "alice", "bob", "three")
	if three.Seq <= r.Seq {
		t.Fatalf("sequence reused: %d after %d", three.Seq, r.Seq)
	}
	if got := bodies(inbox(t, m, "bob", mailbox.InboxOptions{})); !reflect.DeepEqual(got, []string{"alice:one", "alice:two", "alice:three"}) {
		t.Fatalf("inbox = %v", got)
	}
}
