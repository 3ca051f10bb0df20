package store

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// optimisticLockMsg is the Kubernetes message for a stale resourceVersion.
const optimisticLockMsg = "the object has been modified; please apply your changes to the latest version and try again"

// serverOwnedTop are top-level fields that are not user content for the
// purpose of generation bumps.
var serverOwnedTop = map[string]bool{"metadata": true, "status": true, "apiVersion": true, "kind": true}

// applyCreate commits a Create whose object the caller already encoded
// (see Store.Create) up to the server-set metadata that depends on the
// commit: creationTimestamp, generation and resourceVersion.
func (s *Store) applyCreate(g *group, gb *groupBatch, m *mutation) error {
	k := objKey{m.resource, m.ns, m.name}
	sl := s.slotOf(k)
	if sl.current() != nil {
		return apierrors.NewAlreadyExists(gr(m.resource), m.name)
	}
	seq := s.nextSeq(g)
	created := g.createdStamp()
	raw := append(m.pre, `,"creationTimestamp":"`...)
	raw = append(raw, created...)
	raw = append(raw, `","generation":1,"resourceVersion":"`...)
	raw = strconv.AppendUint(raw, seq, 10)
	raw = append(raw, `"}}`...)
	m.pre = nil
	m.outSeq, m.outCreated = seq, created
	return s.emit(g, gb, k, sl, seq, TypeAdded, g.now, raw, nil, m.labels, nil, false)
}

// copyUserMeta sets the client-owned metadata fields of dst from src; empty
// values are treated as absent.
func copyUserMeta(dst, src map[string]interface{}) {
	for _, f := range userMetaFields {
		v, ok := src[f]
		if ok && !isEmpty(v) {
			dst[f] = v
		} else {
			delete(dst, f)
		}
	}
}

func isEmpty(v interface{}) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]interface{}:
		return len(x) == 0
	case []interface{}:
		return len(x) == 0
	}
	return false
}

// checkPreconditions enforces uid and resourceVersion preconditions.
func checkPreconditions(resource, name string, cur *entry, curObj *unstructured.Unstructured, uid, rv string) error {
	if uid != "" && uid != string(curObj.GetUID()) {
		return apierrors.NewConflict(gr(resource), name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, curObj.GetUID()))
	}
	if rv != "" {
		want, err := strconv.ParseUint(rv, 10, 64)
		if err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q: must be a decimal integer", rv))
		}
		if want != cur.rv {
			return apierrors.NewConflict(gr(resource), name, errors.New(optimisticLockMsg))
		}
	}
	return nil
}

// existing returns the writer's view of the object m changes, after
// checking that it exists and m's preconditions (uid, resourceVersion).
func (s *Store) existing(m *mutation) (objKey, *slot, *entry, *unstructured.Unstructured, error) {
	k := objKey{m.resource, m.ns, m.name}
	sl := s.slotOf(k)
	cur := sl.current()
	if cur == nil {
		return k, nil, nil, nil, apierrors.NewNotFound(gr(m.resource), m.name)
	}
	curObj, err := cur.data.object()
	if err != nil {
		return k, nil, nil, nil, err
	}
	if err := checkPreconditions(m.resource, m.name, cur, curObj, m.uid, m.rv); err != nil {
		return k, nil, nil, nil, err
	}
	return k, sl, cur, curObj, nil
}

func (s *Store) applyUpdate(g *group, gb *groupBatch, m *mutation) error {
	k, sl, cur, curObj, err := s.existing(m)
	if err != nil {
		return err
	}
	in := m.obj
	next := &unstructured.Unstructured{Object: make(map[string]interface{}, len(in.Object))}
	for f, v := range in.Object {
		if f != "metadata" && f != "status" {
			next.Object[f] = v
		}
	}
	if st, ok := curObj.Object["status"]; ok {
		next.Object["status"] = st
	}
	curMeta := metadata(curObj)
	md := make(map[string]interface{}, len(curMeta)+2)
	for f, v := range curMeta {
		md[f] = v
	}
	copyUserMeta(md, metadata(in))
	next.Object["metadata"] = md

	terminating := curObj.GetDeletionTimestamp() != nil
	if terminating {
		old := finalizers(curObj)
		for _, f := range finalizers(next) {
			if !slices.Contains(old, f) {
				return apierrors.NewInvalid(schema.GroupKind{Group: Group, Kind: curObj.GetKind()}, m.name,
					field.ErrorList{field.Forbidden(field.NewPath("metadata", "finalizers"),
						"no new finalizers can be added if the object is being deleted")})
			}
		}
	}
	contentChanged := false
	typeChanged := false
	for f := range unionKeys(curObj.Object, next.Object) {
		if f == "metadata" || f == "status" {
			continue
		}
		if !apiequality.Semantic.DeepEqual(curObj.Object[f], next.Object[f]) {
			if serverOwnedTop[f] {
				typeChanged = true
			} else {
				contentChanged = true
			}
		}
	}
	metaChanged := false
	for _, f := range userMetaFields {
		if !apiequality.Semantic.DeepEqual(curMeta[f], md[f]) {
			metaChanged = true
		}
	}
	if !contentChanged && !typeChanged && !metaChanged {
		m.out = curObj
		return nil
	}
	gen := curObj.GetGeneration()
	if contentChanged {
		gen++
	}
	md["generation"] = gen
	now := g.now
	seq := s.nextSeq(g)
	md["resourceVersion"] = strconv.FormatUint(seq, 10)
	typ, remove := TypeModified, false
	if terminating && len(finalizers(next)) == 0 {
		typ, remove = TypeDeleted, true
	}
	if err := s.emit(g, gb, k, sl, seq, typ, now, nil, next, next.GetLabels(), cur, remove); err != nil {
		return err
	}
	m.out = next
	return nil
}

func unionKeys(a, b map[string]interface{}) map[string]struct{} {
	out := make(map[string]struct{}, len(a)+len(b))
	for k := range a {
		out[k] = struct{}{}
	}
	for k := range b {
		out[k] = struct{}{}
	}
	return out
}

func (s *Store) applyUpdateStatus(g *group, gb *groupBatch, m *mutation) error {
	k, sl, cur, curObj, err := s.existing(m)
	if err != nil {
		return err
	}
	newStatus, has := m.obj.Object["status"]
	curStatus, curHas := curObj.Object["status"]
	if has == curHas && apiequality.Semantic.DeepEqual(newStatus, curStatus) {
		m.out = curObj
		return nil
	}
	next := shallowCopy(curObj)
	if has {
		next.Object["status"] = newStatus
	} else {
		delete(next.Object, "status")
	}
	now := g.now
	seq := s.nextSeq(g)
	metadata(next)["resourceVersion"] = strconv.FormatUint(seq, 10)
	if err := s.emit(g, gb, k, sl, seq, TypeStatus, now, nil, next, next.GetLabels(), cur, false); err != nil {
		return err
	}
	m.out = next
	return nil
}

func (s *Store) applyDelete(g *group, gb *groupBatch, m *mutation) error {
	k, sl, cur, curObj, err := s.existing(m)
	if err != nil {
		return err
	}
	now := g.now
	next := shallowCopy(curObj)
	md := metadata(next)
	typ, remove := TypeDeleted, true
	if len(finalizers(curObj)) > 0 {
		if curObj.GetDeletionTimestamp() != nil {
			m.out = curObj
			return nil
		}
		md["deletionTimestamp"] = now.Format(time.RFC3339)
		md["deletionGracePeriodSeconds"] = int64(0)
		typ, remove = TypeTerminating, false
	}
	seq := s.nextSeq(g)
	md["resourceVersion"] = strconv.FormatUint(seq, 10)
	if err := s.emit(g, gb, k, sl, seq, typ, now, nil, next, next.GetLabels(), cur, remove); err != nil {
		return err
	}
	m.out = next
	return nil
}

func (s *Store) applyKV(g *group, gb *groupBatch, m *mutation) error {
	ks := string(m.key)
	if g.kv == nil {
		g.kv = map[string]kvOverlay{}
	}
	switch m.op {
	case opPutKV:
		gb.set(m.key, m.val)
		g.kv[ks] = kvOverlay{val: m.val}
		for _, p := range m.more {
			gb.set(p.key, p.val)
			g.kv[string(p.key)] = kvOverlay{val: p.val}
		}
		return nil
	case opDeleteKV:
		gb.delete(m.key)
		g.kv[ks] = kvOverlay{deleted: true}
		return nil
	}
	// Get or Take: the group overlay first, then pebble, which already holds
	// every earlier group (applied, possibly not yet synced; the reply waits
	// for their sync because groups are acknowledged in order).
	var val []byte
	if o, ok := g.kv[ks]; ok {
		if !o.deleted {
			val = o.val
		}
	} else {
		v, err := s.getRaw(m.key)
		if err != nil {
			return err
		}
		val = v
	}
	if val == nil {
		return apierrors.NewNotFound(schema.GroupResource{Group: Group, Resource: "kv." + m.resource}, m.name)
	}
	m.outVal = append([]byte{}, val...)
	if m.op == opTakeKV {
		gb.delete(m.key)
		g.kv[ks] = kvOverlay{deleted: true}
	}
	return nil
}
