package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestRecordRoundTrip checks that every event type and label change
// survives encodeRecord and parseRecord, including labels that look like
// record syntax.
func TestRecordRoundTrip(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"kind": "Agent", "spec": map[string]interface{}{"s": `a","object":{"x":1}}`, "n": int64(3)},
	}}
	for _, tc := range []struct {
		name string
		ev   event
	}{
		{"added", event{typ: TypeAdded}},
		{"modified", event{typ: TypeModified}},
		{"status", event{typ: TypeStatus}},
		{"terminating", event{typ: TypeTerminating}},
		{"deleted", event{typ: TypeDeleted}},
		{"labels", event{typ: TypeModified, labelsChanged: true,
			prevLabels: map[string]string{"object": `{"}`, `a\"b`: "", "c": "\\", "\x01": "\xff"}}},
		{"empty labels", event{typ: TypeModified, labelsChanged: true, prevLabels: map[string]string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := tc.ev
			ev.time = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
			ev.data = treeData(obj)
			rec, err := encodeRecord(nil, &ev)
			if err != nil {
				t.Fatal(err)
			}
			r, err := parseRecord(rec)
			if err != nil {
				t.Fatal(err)
			}
			if r.typ != ev.typ || !r.time.Equal(ev.time) || r.labelsChanged != ev.labelsChanged ||
				(ev.labelsChanged && !reflect.DeepEqual(r.prevLabels, ev.prevLabels)) {
				t.Fatalf("parsed %+v, want %+v", r, ev)
			}
			got, err := decodeObject(r.object)
			if err != nil || !reflect.DeepEqual(got.Object, obj.Object) {
				t.Fatalf("object %s (%v), want %v", r.object, err, obj.Object)
			}
			// Every truncation is an error, never a panic or a shorter object.
			for i := range len(rec) - len(r.object) + 1 {
				if r, err := parseRecord(rec[:i]); err == nil {
					t.Fatalf("truncated to %d bytes: parsed %+v", i, r)
				}
			}
		})
	}
}

// TestParseRecordEarlierFormats reads the JSON records of earlier builds and
// refuses unknown formats and type codes.
func TestParseRecordEarlierFormats(t *testing.T) {
	r, err := parseRecord([]byte(`{"type":"MODIFIED","time":"2026-01-02T03:04:05.000000006Z","labelsChanged":true,` +
		`"prevLabels":{"a":"b"},"object":{"a":1}}`))
	if err != nil || r.typ != TypeModified || r.time.Nanosecond() != 6 || !r.labelsChanged ||
		r.prevLabels["a"] != "b" || string(r.object) != `{"a":1}` {
		t.Fatalf("JSON record: %+v, %v", r, err)
	}
	for _, rec := range []string{"", "\x02A\x00\x00\x00\x00\x00\x00\x00\x00\x00{}", "\x01Z\x00\x00\x00\x00\x00\x00\x00\x00\x00{}", "{not json"} {
		if r, err := parseRecord([]byte(rec)); err == nil {
			t.Errorf("%q: parsed %+v", rec, r)
		}
	}
}

// FuzzParseRecord: parseRecord never panics, and what it accepts survives
// a re-encoding unchanged.
func FuzzParseRecord(f *testing.F) {
	ev := event{typ: TypeModified, time: time.Unix(1, 2), labelsChanged: true, prevLabels: map[string]string{"k": "v"},
		data: &objData{raw: []byte(`{"a":1}`)}}
	rec, err := encodeRecord(nil, &ev)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec)
	f.Add([]byte(`{"type":"ADDED","time":"2026-01-02T03:04:05Z","object":{}}`))
	f.Add([]byte{recordBinary, 'D', 0, 0, 0, 0, 0, 0, 0, 0, 0, '{', '}'})
	f.Fuzz(func(t *testing.T, rec []byte) {
		r, err := parseRecord(rec)
		if err != nil {
			return
		}
		again, err := encodeRecord(nil, &event{typ: r.typ, time: r.time, labelsChanged: r.labelsChanged,
			prevLabels: r.prevLabels, data: &objData{raw: r.object}})
		if err != nil {
			t.Fatal(err)
		}
		r2, err := parseRecord(again)
		if err != nil || r2.typ != r.typ || !r2.time.Equal(r.time) || r2.labelsChanged != r.labelsChanged ||
			len(r2.prevLabels) != len(r.prevLabels) || string(r2.object) != string(r.object) {
			t.Fatalf("re-encoded %+v as %+v (%v)", r, r2, err)
		}
	})
}

// TestOpenReadsLayout1 opens a store of layout 1 — JSON history records, and
// projections holding a history pointer or, from earlier builds still, the
// object JSON: Open serves the same objects and history and marks the store
// layout 3, which earlier builds refuse.
func TestOpenReadsLayout1(t *testing.T) {
	ctx := t.Context()
	obj := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "aicli.dev/v1alpha1", "kind": "Agent",
			"metadata": map[string]interface{}{"namespace": "ns", "name": name},
			"spec":     map[string]interface{}{"model": "m"},
		}}
	}
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rvs := map[string]string{}
	for _, n := range []string{"a", "b", "c"} {
		o, err := s.Create(ctx, "agents", obj(n))
		if err != nil {
			t.Fatal(err)
		}
		rvs[n] = o.GetResourceVersion()
	}
	if _, err := s.Delete(ctx, "agents", "ns", "c", DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Rewrite the history as JSON records and b's projection as its JSON.
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixHistory), UpperBound: prefixEnd([]byte(prefixHistory))})
	if err != nil {
		t.Fatal(err)
	}
	b := s.db.NewBatch()
	for it.First(); it.Valid(); it.Next() {
		r, err := parseRecord(it.Value())
		if err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(jsonRecord{Type: r.typ, Time: r.time, Object: r.object})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Set(append([]byte{}, it.Key()...), js, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, name, _, _ := splitHistoryKey(it.Key()); name == "b" {
			if err := b.Set(appendObjectKey(nil, "agents", "ns", "b"), r.object, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := errors.Join(it.Close(), b.Set(keyVersion, []byte("1"), nil), b.Commit(pebble.Sync), s.Close()); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, n := range []string{"a", "b"} {
		got, err := s.Get(ctx, "agents", "ns", n)
		if err != nil || got.GetResourceVersion() != rvs[n] {
			t.Fatalf("get %s from layout 1: %v, %v", n, got, err)
		}
	}
	if _, err := s.Get(ctx, "agents", "ns", "c"); !apierrors.IsNotFound(err) {
		t.Fatalf("deleted object from layout 1: %v", err)
	}
	if h, err := s.History(ctx, "agents", "ns", "c"); err != nil || len(h) != 2 || h[1].Type != TypeDeleted {
		t.Fatalf("history of c from layout 1: %v, %v", h, err)
	}
	if v, _ := s.getRaw(keyVersion); string(v) != layoutVersion {
		t.Fatalf("layout version after open %q", v)
	}
	// New writes go on top of the old records.
	if _, err := s.Create(ctx, "agents", obj("d")); err != nil {
		t.Fatal(err)
	}
}

// TestOpenReadsLayout2WatchLog opens a store whose watch log has one entry
// per event (layout 2, the value being the history key): replay from the
// log and compaction work over those entries and new group entries after
// them, and Open marks the store layout 3.
func TestOpenReadsLayout2WatchLog(t *testing.T) {
	ctx := t.Context()
	create := func(s *Store, name string) {
		t.Helper()
		if _, err := s.Create(ctx, "agents", &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "aicli.dev/v1alpha1", "kind": "Agent",
			"metadata": map[string]interface{}{"namespace": "ns", "name": name},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		create(s, n)
	}
	// Rewrite the log as layout 2 wrote it.
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixEvent), UpperBound: prefixEnd([]byte(prefixEvent))})
	if err != nil {
		t.Fatal(err)
	}
	b := s.db.NewBatch()
	for it.First(); it.Valid(); it.Next() {
		if err := errors.Join(b.Delete(append([]byte{}, it.Key()...), nil), forEachLogEvent(it.Value(), func(hk []byte) error {
			_, _, _, seq, err := splitHistoryKey(hk)
			return errors.Join(err, b.Set(eventKey(seq), append([]byte{}, hk...), nil))
		})); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(it.Close(), b.Set(keyVersion, []byte("2"), nil), b.Commit(pebble.Sync), s.Close()); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir, Options{WatchCache: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _ := s.getRaw(keyVersion); string(v) != layoutVersion {
		t.Fatalf("layout version after open %q", v)
	}
	for _, n := range []string{"e", "f"} {
		create(s, n)
	}
	names := func(from uint64) string {
		t.Helper()
		w, err := s.Watch(ctx, "agents", "", WatchOptions{ResourceVersion: strconv.FormatUint(from, 10)})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var got string
		for range 6 - from {
			select {
			case ev := <-w.ResultChan():
				got += ev.Object.(*unstructured.Unstructured).GetName()
			case <-time.After(5 * time.Second):
				t.Fatalf("replay from %d: only %q within 5s", from, got)
			}
		}
		return got
	}
	if got := names(1); got != "bcdef" {
		t.Fatalf("replay from 1 over layout-2 entries: %q", got)
	}
	if err := s.Compact(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if got := names(2); got != "cdef" {
		t.Fatalf("replay from 2 after compaction to 3: %q", got)
	}
}

// TestSweepRemovesDeletedSlots checks that deleted objects leave the index
// once their removal is published, and that a name deleted and created
// again in one group stays visible.
func TestSweepRemovesDeletedSlots(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	obj := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "aicli.dev/v1alpha1", "kind": "Agent",
			"metadata": map[string]interface{}{"namespace": "ns", "name": name},
		}}
	}
	for _, n := range []string{"a", "b"} {
		if _, err := s.Create(ctx, "agents", obj(n)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, "agents", "ns", n, DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The next group sweeps.
	if _, err := s.Create(ctx, "agents", obj("c")); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	n := len(s.index["agents"])
	s.mu.RUnlock()
	if n != 1 {
		t.Fatalf("index holds %d slots, want 1", n)
	}
	if _, err := s.Create(ctx, "agents", obj("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "agents", "ns", "a"); err != nil {
		t.Fatalf("recreated object: %v", err)
	}
	l, err := s.List(ctx, "agents", "", nil)
	if err != nil || len(l.Items) != 2 {
		t.Fatalf("list: %d items, %v", len(l.Items), err)
	}
}

// TestCreateEncodings checks that Create returns, stores and reloads the
// same canonical object whether its input is canonical (copied and encoded
// in one walk) or not (JSON round trip first), and drops status and
// server-owned metadata.
func TestCreateEncodings(t *testing.T) {
	type cfg struct {
		Mode string `json:"mode"`
	}
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	inputs := map[string]map[string]interface{}{
		"canonical": {"n": int64(3), "f": 1.5, "whole": 2.0, "s": "x\"y", "l": []interface{}{"a", true, nil},
			"m": map[string]interface{}{}},
		"go-typed": {"n": 3, "f": float32(1.5), "l": []string{"a", "b"}, "c": cfg{Mode: "m"},
			"t": map[string]string{"k": "v"}},
	}
	created := map[string]*unstructured.Unstructured{}
	for name, spec := range inputs {
		in := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "aicli.dev/v1alpha1", "kind": "Agent",
			"metadata": map[string]interface{}{"namespace": "ns", "name": name, "uid": "client", "resourceVersion": "7",
				"labels": map[string]interface{}{"a": "b"}, "annotations": map[string]interface{}{}, "generateName": ""},
			"spec":   spec,
			"status": map[string]interface{}{"phase": "x"},
		}}
		out, err := s.Create(ctx, "agents", in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, ok := out.Object["status"]; ok {
			t.Errorf("%s: status kept", name)
		}
		md := out.Object["metadata"].(map[string]interface{})
		if md["uid"] == "client" || md["resourceVersion"] == "7" || md["generation"] != int64(1) {
			t.Errorf("%s: server metadata not set: %v", name, md)
		}
		if _, ok := md["annotations"]; ok {
			t.Errorf("%s: empty annotations kept", name)
		}
		if _, ok := md["generateName"]; ok {
			t.Errorf("%s: empty generateName kept", name)
		}
		// The result is canonical: a JSON round trip does not change it.
		b, err := json.Marshal(out.Object)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := decodeObject(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rt.Object, out.Object) {
			t.Errorf("%s: result is not canonical:\n%#v\n%#v", name, out.Object, rt.Object)
		}
		got, err := s.Get(ctx, "agents", "ns", name)
		if err != nil || !reflect.DeepEqual(got.Object, out.Object) {
			t.Errorf("%s: stored %v (%v), returned %v", name, got, err, out.Object)
		}
		created[name] = out
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, want := range created {
		got, err := s.Get(ctx, "agents", "ns", name)
		if err != nil || !reflect.DeepEqual(got.Object, want.Object) {
			t.Errorf("%s after reopen: %v (%v), want %v", name, got, err, want.Object)
		}
	}
}

// TestLogGroupRoundTrip checks the watch-log group encoding: the history
// keys of a group come back in order, and a value cut inside any key is an
// error, never a panic or a key cut short.
func TestLogGroupRoundTrip(t *testing.T) {
	events := []*event{
		{resource: "agents", ns: "ns", name: "a", seq: 7},
		{resource: "conversations", ns: "team-b", name: "c-1", seq: 9},
		{resource: "agents", ns: "ns", name: strings.Repeat("n", 253), seq: 10},
	}
	var want [][]byte
	for _, ev := range events {
		want = append(want, appendHistoryKey(nil, ev.resource, ev.ns, ev.name, ev.seq))
	}
	val := appendLogGroup(nil, events)
	var got [][]byte
	if err := forEachLogEvent(val, func(hk []byte) error { got = append(got, hk); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("keys %q, want %q", got, want)
	}
	for i := 1; i < len(val); i++ {
		n := 0
		err := forEachLogEvent(val[:i], func(hk []byte) error {
			if !bytes.Equal(hk, want[n]) {
				t.Fatalf("cut at %d: key %d is %q", i, n, hk)
			}
			n++
			return nil
		})
		if err == nil && !bytes.Equal(val[:i], appendLogGroup(nil, events[:n])) {
			t.Fatalf("cut at %d, inside key %d: no error", i, n)
		}
	}
}

// TestGroupBatchWritesInKeyOrder checks that a groupBatch hands its point
// writes to pebble sorted by key, keeps the order of writes to the same key
// (the last one wins), drops a value whose encoding fails, and applies
// range deletions ahead of the point writes.
func TestGroupBatchWritesInKeyOrder(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Set([]byte("r/old"), []byte("x"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	var gb groupBatch
	gb.reset(db.NewBatch())
	if !gb.empty() {
		t.Fatal("a fresh groupBatch is not empty")
	}
	// 100 writes to 5 keys in descending key order, each key rewritten with
	// growing values: enough for an unstable sort to reorder equal keys.
	for i := range 100 {
		key := []byte("k/" + strconv.Itoa(4-i%5))
		if i%7 == 6 {
			gb.delete(key)
			continue
		}
		v := []byte(strconv.Itoa(i))
		if err := gb.setEncoded(key, func(b []byte) ([]byte, error) { return append(b, v...), nil }); err != nil {
			t.Fatal(err)
		}
	}
	boom := errors.New("boom")
	if err := gb.setEncoded([]byte("k/0"), func(b []byte) ([]byte, error) { return append(b, "junk"...), boom }); !errors.Is(err, boom) {
		t.Fatalf("setEncoded = %v, want the encoder's error", err)
	}
	gb.set([]byte("a/first"), []byte("1"))
	if err := gb.deleteRange([]byte("r/"), []byte("r0")); err != nil {
		t.Fatal(err)
	}
	b, err := gb.commit()
	if err != nil {
		t.Fatal(err)
	}
	// The batch: the range deletion, then the point writes by key, each
	// key's writes in the order they were made.
	r := b.Reader()
	kind, _, _, ok, err := r.Next()
	if !ok || err != nil || kind != pebble.InternalKeyKindRangeDelete {
		t.Fatalf("first batch entry: kind %v ok %v err %v, want the range deletion", kind, ok, err)
	}
	var prevKey []byte
	lastSeen := map[string]int{}
	n := 0
	for {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		n++
		if bytes.Compare(k, prevKey) < 0 {
			t.Fatalf("batch key %q after %q", k, prevKey)
		}
		prevKey = append(prevKey[:0], k...)
		if kind == pebble.InternalKeyKindSet && bytes.HasPrefix(k, []byte("k/")) {
			i, _ := strconv.Atoi(string(v))
			if i < lastSeen[string(k)] {
				t.Fatalf("key %q: value %d after %d", k, i, lastSeen[string(k)])
			}
			lastSeen[string(k)] = i
		}
	}
	if n != 101 {
		t.Fatalf("batch holds %d point writes, want 101", n)
	}
	if err := db.Apply(b, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	// The last write of each key wins: i = 95..99 wrote k/4..k/0 (97 a
	// delete), and the failed encoding left no write behind.
	for i := 95; i < 100; i++ {
		k := "k/" + strconv.Itoa(4-i%5)
		v, closer, err := db.Get([]byte(k))
		if i%7 == 6 {
			if !errors.Is(err, pebble.ErrNotFound) {
				t.Errorf("%s after its delete: %v, want not found", k, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("get %s: %v", k, err)
		}
		if string(v) != strconv.Itoa(i) {
			t.Errorf("%s = %q, want %d", k, v, i)
		}
		_ = closer.Close()
	}
	if _, _, err := db.Get([]byte("r/old")); !errors.Is(err, pebble.ErrNotFound) {
		t.Errorf("r/old after the range deletion: %v, want not found", err)
	}
	// A group that outgrew maxKeptBatchBuf does not keep its buffer.
	gb.reset(db.NewBatch())
	gb.set([]byte("big"), make([]byte, maxKeptBatchBuf+1))
	_ = gb.pb.Close()
	gb.reset(db.NewBatch())
	if cap(gb.buf) > maxKeptBatchBuf || !gb.empty() {
		t.Fatalf("after reset: buffer cap %d, empty %v", cap(gb.buf), gb.empty())
	}
	_ = gb.pb.Close()
}
