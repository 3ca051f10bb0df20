package store

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// History and watch-log event types.
const (
	// TypeAdded records a Create.
	TypeAdded = "ADDED"
	// TypeModified records an Update that changed spec or metadata.
	TypeModified = "MODIFIED"
	// TypeStatus records an UpdateStatus.
	TypeStatus = "STATUS"
	// TypeTerminating records a Delete that set deletionTimestamp because
	// finalizers were present.
	TypeTerminating = "TERMINATING"
	// TypeDeleted records the removal of an object.
	TypeDeleted = "DELETED"
)

// event is one entry of the watch log, shared read-only between the index,
// watchers and history readers once published.
type event struct {
	seq      uint64
	typ      string
	resource string
	ns       string
	name     string
	time     time.Time
	data     *objData
	labels   map[string]string // the object's labels as of this event
	// labelsChanged is set when the event changed the object's labels;
	// prevLabels then holds the labels before the event.
	labelsChanged bool
	prevLabels    map[string]string
}

// objData is one immutable version of a stored object. A created object is
// kept as the JSON it was committed as and decoded on first use (most are
// never read before their next version); every other version is kept as
// the tree the writer built. The tree is shared read-only: callers get deep
// copies.
type objData struct {
	mu   sync.Mutex
	raw  []byte // the object's JSON until it is decoded
	tree atomic.Pointer[unstructured.Unstructured]
}

// treeData wraps an already decoded object.
func treeData(obj *unstructured.Unstructured) *objData {
	d := &objData{}
	d.tree.Store(obj)
	return d
}

// object returns the shared, read-only tree, decoding it on first use.
func (d *objData) object() (*unstructured.Unstructured, error) {
	if t := d.tree.Load(); t != nil {
		return t, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if t := d.tree.Load(); t != nil {
		return t, nil
	}
	obj, err := decodeObject(d.raw)
	if err != nil {
		return nil, fmt.Errorf("store: stored object: %w", err)
	}
	d.tree.Store(obj)
	d.raw = nil
	return obj, nil
}

// decodeObject decodes JSON the way the API machinery does (integers become
// int64, other numbers float64), so stored and incoming objects compare equal.
func decodeObject(b []byte) (*unstructured.Unstructured, error) {
	if m, err := decodeJSONObject(b); err == nil {
		return &unstructured.Unstructured{Object: m}, nil
	}
	m := map[string]interface{}{}
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// normalize returns a private, JSON-canonical deep copy of obj. It is done in
// the caller's goroutine so the writer only stamps metadata and encodes.
func normalize(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if obj == nil || obj.Object == nil {
		return nil, fmt.Errorf("object is empty")
	}
	c, ok, err := canonical(obj.Object)
	if err != nil {
		return nil, err
	}
	if ok {
		return &unstructured.Unstructured{Object: c.(map[string]interface{})}, nil
	}
	b, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("object is not JSON-encodable: %w", err)
	}
	return decodeObject(b)
}

// metadata returns obj's metadata map (nil if absent or malformed).
func metadata(obj *unstructured.Unstructured) map[string]interface{} {
	m, _ := obj.Object["metadata"].(map[string]interface{})
	return m
}

// userMetaFields are the metadata fields a client owns; all other metadata
// fields are owned by the store.
var userMetaFields = []string{"labels", "annotations", "finalizers", "ownerReferences"}

func isUserMeta(f string) bool {
	switch f {
	case "labels", "annotations", "finalizers", "ownerReferences":
		return true
	}
	return false
}

// shallowCopy copies the top level of obj and its metadata map, so the copy
// can be given new metadata values without touching obj. Nested values are
// shared and must be treated as read-only.
func shallowCopy(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := make(map[string]interface{}, len(obj.Object))
	for k, v := range obj.Object {
		out[k] = v
	}
	md := make(map[string]interface{}, 12)
	for k, v := range metadata(obj) {
		md[k] = v
	}
	out["metadata"] = md
	return &unstructured.Unstructured{Object: out}
}

func stringMap(v interface{}) map[string]string {
	m, ok := v.(map[string]interface{})
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		s, _ := x.(string)
		out[k] = s
	}
	return out
}

func finalizers(obj *unstructured.Unstructured) []string {
	l, _ := metadata(obj)["finalizers"].([]interface{})
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
