package store

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// DeleteOptions are the optional preconditions of Delete.
type DeleteOptions struct {
	// Preconditions, when set, must match the stored object's uid and/or
	// resourceVersion or Delete fails with a Conflict.
	Preconditions *metav1.Preconditions
}

// HistoryEvent is one recorded change of an object.
type HistoryEvent struct {
	// ResourceVersion is the event's sequence number.
	ResourceVersion uint64
	// Type is one of TypeAdded, TypeModified, TypeStatus, TypeTerminating,
	// TypeDeleted.
	Type string
	// Time is when the store committed the event (Options.Clock).
	Time time.Time
	// Object is the object as of this event (for TypeDeleted: its last state).
	Object *unstructured.Unstructured
}

func badRequest(format string, args ...interface{}) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

// checkAddress checks an object's address. The namespace is empty for a
// cluster-scoped kind (the API decides which kinds those are).
func checkAddress(resource, ns, name string) error {
	for _, c := range []struct{ what, v string }{
		{"resource", resource}, {"metadata.name", name},
	} {
		if err := checkSegment(c.what, c.v); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	}
	if ns != "" {
		if err := checkSegment("metadata.namespace", ns); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	}
	return nil
}

// prepare validates the address of obj and returns a private normalized copy.
func prepare(resource string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, badRequest("object is required")
	}
	if err := checkAddress(resource, obj.GetNamespace(), obj.GetName()); err != nil {
		return nil, err
	}
	n, err := normalize(obj)
	if err != nil {
		return nil, badRequest("%s/%s: %v", obj.GetNamespace(), obj.GetName(), err)
	}
	if _, ok := n.Object["metadata"].(map[string]interface{}); !ok {
		return nil, badRequest("metadata must be an object")
	}
	return n, nil
}

func init() {
	// Every Create draws a uid; the pooled source reads the OS's randomness
	// 16 uids at a time instead of making a getrandom call per write.
	uuid.EnableRandPool()
}

// Create stores a new object. namespace and name are required; status is
// dropped (it is written only through UpdateStatus). The store sets uid,
// creationTimestamp, generation=1 and resourceVersion. Create takes obj:
// it completes it in place and returns it (a copy instead when obj is not
// in canonical JSON form, see the package doc); obj is reduced to its
// client-owned fields even when Create fails.
func (s *Store) Create(ctx context.Context, resource string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, badRequest("object is required")
	}
	if err := checkAddress(resource, obj.GetNamespace(), obj.GetName()); err != nil {
		return nil, err
	}
	// n is the result: obj completed in place, or its canonical copy. The
	// store keeps only the JSON encoded here (the writer appends what
	// depends on the commit), so the object is neither copied nor encoded
	// by the writer.
	uid := uuid.NewString()
	n, pre, err := s.encodeCreate(obj, uid)
	if err != nil {
		return nil, badRequest("%s/%s: %v", obj.GetNamespace(), obj.GetName(), err)
	}
	md := metadata(n)
	m, _ := s.mutPool.Get().(*mutation)
	if m == nil {
		m = &mutation{}
	}
	m.op, m.resource, m.ns, m.name, m.pre, m.labels = opCreate, resource, n.GetNamespace(), n.GetName(), pre, n.GetLabels()
	err = s.submit(ctx, m)
	seq, created := m.outSeq, m.outCreated
	if m.acked {
		*m = mutation{done: m.done}
		s.mutPool.Put(m)
	}
	if err != nil {
		return nil, err
	}
	md["uid"] = uid
	md["creationTimestamp"] = created
	md["generation"] = int64(1)
	md["resourceVersion"] = strconv.FormatUint(seq, 10)
	return n, nil
}

// Update replaces the user-owned parts of an object: every top-level field
// except metadata and status, plus metadata labels, annotations, finalizers
// and ownerReferences. A non-empty resourceVersion (or uid) must match the
// stored one (Conflict otherwise). generation grows when content other than
// metadata/status/apiVersion/kind changes. An update that changes nothing
// writes nothing and returns the stored object. Removing the last finalizer
// of a terminating object deletes it.
func (s *Store) Update(ctx context.Context, resource string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	n, err := prepare(resource, obj)
	if err != nil {
		return nil, err
	}
	m := &mutation{op: opUpdate, resource: resource, ns: n.GetNamespace(), name: n.GetName(), obj: n,
		uid: string(n.GetUID()), rv: n.GetResourceVersion()}
	return s.objectResult(ctx, m)
}

// UpdateStatus replaces only the status of an object, with the same
// preconditions as Update; it never changes generation and is a no-op when
// the status is unchanged.
func (s *Store) UpdateStatus(ctx context.Context, resource string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	n, err := prepare(resource, obj)
	if err != nil {
		return nil, err
	}
	m := &mutation{op: opUpdateStatus, resource: resource, ns: n.GetNamespace(), name: n.GetName(), obj: n,
		uid: string(n.GetUID()), rv: n.GetResourceVersion()}
	return s.objectResult(ctx, m)
}

// Delete removes an object, or, if it has finalizers, marks it terminating
// by setting deletionTimestamp (once; later Deletes return it unchanged).
func (s *Store) Delete(ctx context.Context, resource, namespace, name string, opts DeleteOptions) (*unstructured.Unstructured, error) {
	if err := checkAddress(resource, namespace, name); err != nil {
		return nil, err
	}
	m := &mutation{op: opDelete, resource: resource, ns: namespace, name: name}
	if p := opts.Preconditions; p != nil {
		if p.UID != nil {
			m.uid = string(*p.UID)
		}
		if p.ResourceVersion != nil {
			m.rv = *p.ResourceVersion
		}
	}
	return s.objectResult(ctx, m)
}

func (s *Store) objectResult(ctx context.Context, m *mutation) (*unstructured.Unstructured, error) {
	if err := s.submit(ctx, m); err != nil {
		return nil, err
	}
	return m.out.DeepCopy(), nil
}

// Get returns a copy of the current object.
func (s *Store) Get(ctx context.Context, resource, namespace, name string) (*unstructured.Unstructured, error) {
	if err := checkAddress(resource, namespace, name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s.mu.RLock()
	e := s.visible(resource, namespace, name)
	s.mu.RUnlock()
	if e == nil {
		return nil, apierrors.NewNotFound(gr(resource), name)
	}
	obj, err := e.data.object()
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return obj.DeepCopy(), nil
}

// List returns copies of the objects of resource in namespace ("" = all
// namespaces) matching sel (nil = everything), sorted by namespace and
// name. The list's resourceVersion is the store's current one.
func (s *Store) List(ctx context.Context, resource, namespace string, sel labels.Selector) (*unstructured.UnstructuredList, error) {
	if err := checkSegment("resource", resource); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if sel == nil {
		sel = labels.Everything()
	}
	type item struct {
		k nsName
		e *entry
	}
	var items []item
	s.mu.RLock()
	rv := s.rv.Load()
	for k, sl := range s.index[resource] {
		e := sl.pub
		if e == nil || (namespace != "" && k.ns != namespace) {
			continue
		}
		if !sel.Matches(labels.Set(e.labels)) {
			continue
		}
		items = append(items, item{k, e})
	}
	s.mu.RUnlock()
	sort.Slice(items, func(i, j int) bool {
		if items[i].k.ns != items[j].k.ns {
			return items[i].k.ns < items[j].k.ns
		}
		return items[i].k.name < items[j].k.name
	})
	list := &unstructured.UnstructuredList{Object: map[string]interface{}{}, Items: make([]unstructured.Unstructured, len(items))}
	for i, it := range items {
		obj, err := it.e.data.object()
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		list.Items[i] = *obj.DeepCopy()
	}
	if len(items) > 0 {
		list.SetAPIVersion(list.Items[0].GetAPIVersion())
		list.SetKind(list.Items[0].GetKind() + "List")
	}
	list.SetResourceVersion(strconv.FormatUint(rv, 10))
	return list, nil
}

// History returns every recorded event of the object, oldest first,
// including status writes and deletion. It survives watch-log compaction
// and the object's deletion; if the name was reused, earlier incarnations'
// events come first (tell them apart by metadata.uid).
func (s *Store) History(ctx context.Context, resource, namespace, name string) ([]HistoryEvent, error) {
	if err := checkAddress(resource, namespace, name); err != nil {
		return nil, err
	}
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if s.dbClosed {
		return nil, ErrClosed
	}
	limit := s.rv.Load() // events beyond it may be applied but not yet durable
	p := historyPrefix(resource, namespace, name)
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, fmt.Errorf("store: history %s/%s: %w", namespace, name, err)
	}
	defer it.Close()
	var out []HistoryEvent
	for it.First(); it.Valid(); it.Next() {
		seq, err := decodeUint64(it.Key()[len(p):])
		if err != nil {
			return nil, err
		}
		if seq > limit {
			break
		}
		ev, err := decodeRecord(it.Key(), it.Value())
		if err != nil {
			return nil, err
		}
		obj, err := ev.data.object()
		if err != nil {
			return nil, err
		}
		out = append(out, HistoryEvent{ResourceVersion: ev.seq, Type: ev.typ, Time: ev.time, Object: obj})
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("store: history %s/%s: %w", namespace, name, err)
	}
	return out, nil
}

// Compact trims the watch log below keepFrom: watches from a
// resourceVersion below keepFrom-1 then fail with 410 Gone. History is kept.
func (s *Store) Compact(ctx context.Context, keepFrom uint64) error {
	if keepFrom == 0 {
		return badRequest("keepFrom must be positive")
	}
	return s.submit(ctx, &mutation{op: opCompact, keepFrom: keepFrom})
}

// CompactedFrom returns the oldest sequence still in the watch log; a watch
// can resume from any resourceVersion >= CompactedFrom()-1.
func (s *Store) CompactedFrom() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.compactFrom
}
