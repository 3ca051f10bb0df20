package store

import (
	"encoding/json"
	"reflect"
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
			rec, err := encodeRecord(nil, &ev, ev.time.AppendFormat(nil, time.RFC3339Nano))
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
