package store

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestRecordObject checks that the object found in a record without decoding
// it is exactly the record's "object" field, including records whose
// previous labels look like record fields.
func TestRecordObject(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"kind": "Agent", "spec": map[string]interface{}{"s": `a","object":{"x":1}}`, "n": int64(3)},
	}}
	for _, tc := range []struct {
		name string
		ev   event
	}{
		{"plain", event{typ: TypeAdded}},
		{"labels", event{typ: TypeModified, labelsChanged: true,
			prevLabels: map[string]string{"object": `{"}`, `a\"b`: "", "c": "\\"}}},
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
			var r record
			if err := json.Unmarshal(rec, &r); err != nil {
				t.Fatalf("record is not JSON: %v\n%s", err, rec)
			}
			got, ok := recordObjectFast(rec)
			if !ok {
				t.Fatalf("fast path refused %s", rec)
			}
			if string(got) != string(r.Object) {
				t.Fatalf("object %s, want %s", got, r.Object)
			}
		})
	}
	// Any other layout falls back to a real decode.
	rec := []byte(`{"object":{"a":1},"type":"ADDED","time":"2026-01-02T03:04:05Z"}`)
	if _, ok := recordObjectFast(rec); ok {
		t.Fatal("fast path accepted a foreign layout")
	}
	got, err := recordObject(rec)
	if err != nil || string(got) != `{"a":1}` {
		t.Fatalf("recordObject = %s, %v", got, err)
	}
}

// TestOpenReadsJSONProjections opens a store whose projection holds the
// object JSON itself, as stores written by earlier builds do.
func TestOpenReadsJSONProjections(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "aicli.dev/v1alpha1", "kind": "Agent",
		"metadata": map[string]interface{}{"namespace": "ns", "name": "a"},
		"spec":     map[string]interface{}{"model": "m"},
	}}
	created, err := s.Create(t.Context(), "agents", in)
	if err != nil {
		t.Fatal(err)
	}
	objJSON, err := appendJSON(nil, created.Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Set(appendObjectKey(nil, "agents", "ns", "a"), objJSON, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Get(t.Context(), "agents", "ns", "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.GetUID() != created.GetUID() || got.GetResourceVersion() != created.GetResourceVersion() {
		t.Fatalf("got %v, want %v", got.Object, created.Object)
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
