package transcript

import (
	"context"
	"fmt"
	"testing"
	"time"

	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

func TestStoreLogAppendsReadsAndSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log := &StoreLog{Store: st}
	ctx := context.Background()
	sub, err := log.Subscribe(ctx, "c1", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := log.Append(ctx, "c1", []transcriptwire.Entry{{Speaker: transcriptwire.SpeakerAgent, Text: fmt.Sprint("line ", i), NativeID: fmt.Sprint("n", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	// A duplicate native id is not committed again; another conversation is separate.
	if got, _ := log.Append(ctx, "c1", []transcriptwire.Entry{{Speaker: transcriptwire.SpeakerAgent, Text: "again", NativeID: "n2"}}); len(got) != 0 {
		t.Fatalf("duplicate committed: %+v", got)
	}
	if _, err := log.Append(ctx, "c2", []transcriptwire.Entry{{Speaker: transcriptwire.SpeakerHuman, Text: "other"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		select {
		case e := <-sub:
			if e.Cursor != int64(i+1) || e.Text != fmt.Sprint("line ", i) {
				t.Fatalf("subscription entry %d: %+v", i, e)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("subscription stalled")
		}
	}
	page, err := log.Read(ctx, "c1", 3, 2)
	if err != nil || len(page) != 2 || page[0].Cursor != 3 || page[1].Cursor != 4 {
		t.Fatalf("ranged read: %+v %v", page, err)
	}
	st.Close()

	st, err = store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log = &StoreLog{Store: st}
	all, err := log.Read(ctx, "c1", 0, 0)
	if err != nil || len(all) != 5 {
		t.Fatalf("after reopen: %+v %v", all, err)
	}
	got, err := log.Append(ctx, "c1", []transcriptwire.Entry{{Speaker: transcriptwire.SpeakerAgent, Text: "dup", NativeID: "n4"}, {Speaker: transcriptwire.SpeakerAgent, Text: "six", NativeID: "n5"}})
	if err != nil || len(got) != 1 || got[0].Cursor != 6 {
		t.Fatalf("append after reopen: %+v %v", got, err)
	}
	// A subscription resumed from a cursor gets only what follows it.
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	sub, _ = log.Subscribe(ctx2, "c1", 5)
	for _, want := range []int64{5, 6} {
		if e := <-sub; e.Cursor != want {
			t.Fatalf("resumed subscription: %+v, want cursor %d", e, want)
		}
	}
}

// TestStoreLogReportsCommittedEntries checks that Committed gets exactly the
// committed entries (duplicates skipped), after the log's locks are released:
// the hook may read the log.
func TestStoreLogReportsCommittedEntries(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	log := &StoreLog{Store: st}
	var got []int64
	log.Committed = func(uid string, entries []transcriptwire.Entry) {
		if _, err := log.Read(ctx, uid, 0, 0); err != nil { // would deadlock under the lock
			t.Error(err)
		}
		for _, e := range entries {
			got = append(got, e.Cursor)
		}
	}
	for _, ids := range [][]string{{"a", "b"}, {"b"}, {"b", "c"}} {
		var es []transcriptwire.Entry
		for _, id := range ids {
			es = append(es, transcriptwire.Entry{Speaker: transcriptwire.SpeakerAgent, Text: id, NativeID: id})
		}
		if _, err := log.Append(ctx, "c1", es); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("committed cursors %v, want [1 2 3]", got)
	}
}
