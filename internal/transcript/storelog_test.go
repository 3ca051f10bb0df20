package transcript

import (
	"context"
	"encoding/json"
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

// TestStoreLogIndexesEntriesCommittedBeforeTheIndex checks that a transcript written before the native id index
// existed (entries only, as the log used to write them) is indexed at its first load: an entry the guest sends again
// is recognised, and the index's mark makes the next load skip the work.
func TestStoreLogIndexesEntriesCommittedBeforeTheIndex(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	const n = 2500 // more than one indexing batch
	for i := range n {
		e := transcriptwire.Entry{Cursor: int64(i + 1), Speaker: transcriptwire.SpeakerAgent, Text: fmt.Sprint("old ", i), NativeID: fmt.Sprint("n", i)}
		if i%7 == 0 {
			e.NativeID = "" // entries without a native id (platform deliveries) have no index key
		}
		val, _ := json.Marshal(e)
		if err := st.PutKV(ctx, Bucket, Key("c1", e.Cursor), val); err != nil {
			t.Fatal(err)
		}
	}
	log := &StoreLog{Store: st}
	for _, id := range []string{"n1", "n2498", "n2400"} {
		if seen, err := log.HasNative(ctx, "c1", id); err != nil || !seen {
			t.Fatalf("HasNative(%s) = %v, %v; want true", id, seen, err)
		}
	}
	if seen, _ := log.HasNative(ctx, "c1", "n0"); seen { // cursor 1 had no native id
		t.Fatal("an entry without a native id was indexed under one")
	}
	if seen, _ := log.HasNative(ctx, "c1", "n"); seen { // a prefix of indexed ids is not one of them
		t.Fatal("a prefix of an indexed id counts as indexed")
	}
	got, err := log.Append(ctx, "c1", []transcriptwire.Entry{
		{Speaker: transcriptwire.SpeakerAgent, Text: "old 5", NativeID: "n5"},
		{Speaker: transcriptwire.SpeakerAgent, Text: "new", NativeID: "m1"},
	})
	if err != nil || len(got) != 1 || got[0].Cursor != n+1 {
		t.Fatalf("append after indexing: %+v %v; want only the new entry at cursor %d", got, err, n+1)
	}
	mark, err := st.GetKV(ctx, NativeBucket, "c1")
	if err != nil || string(mark) != fmt.Sprint(n+1) {
		t.Fatalf("index mark %q %v, want %d", mark, err, n+1)
	}
	// A new log (a restarted supervisor) finds the index complete and the last cursor.
	log = &StoreLog{Store: st}
	if last, err := log.Last(ctx, "c1"); err != nil || last != n+1 {
		t.Fatalf("Last after restart = %d %v", last, err)
	}
	if seen, _ := log.HasNative(ctx, "c1", "m1"); !seen {
		t.Fatal("an id appended after indexing is not found after a restart")
	}
}
