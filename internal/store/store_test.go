package store_test

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/store/storetest"
)

func fixedClock() func() time.Time {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	return func() time.Time { return t0 }
}

func TestCreate(t *testing.T) {
	s := storetest.Open(t, store.Options{Clock: fixedClock()})
	in := agent("ns1", "a", map[string]interface{}{"harness": "fake"})
	in.Object["status"] = map[string]interface{}{"phase": "x"}
	in.SetUID("client-chosen")
	in.SetGeneration(7)
	in.SetLabels(map[string]string{"team": "red"})
	out := mustCreate(t, s, in)

	if out.GetUID() == "" || out.GetUID() == "client-chosen" {
		t.Errorf("uid not server-set: %q", out.GetUID())
	}
	if out.GetGeneration() != 1 {
		t.Errorf("generation = %d, want 1", out.GetGeneration())
	}
	if got := out.GetCreationTimestamp().UTC(); !got.Equal(fixedClock()()) {
		t.Errorf("creationTimestamp = %v", got)
	}
	if _, ok := out.Object["status"]; ok {
		t.Errorf("status kept on create: %v", out.Object["status"])
	}
	if out.GetResourceVersion() != strconv.FormatUint(s.CurrentRV(), 10) || s.CurrentRV() == 0 {
		t.Errorf("rv %q, current %d", out.GetResourceVersion(), s.CurrentRV())
	}
	if out.GetLabels()["team"] != "red" {
		t.Errorf("labels lost: %v", out.GetLabels())
	}
	got := mustGet(t, s, "ns1", "a")
	if got.GetResourceVersion() != out.GetResourceVersion() || got.GetUID() != out.GetUID() {
		t.Errorf("get differs from create result: %v vs %v", got, out)
	}
	// The returned object is a copy: mutating it does not change the store.
	out.SetLabels(map[string]string{"team": "blue"})
	if mustGet(t, s, "ns1", "a").GetLabels()["team"] != "red" {
		t.Errorf("store object aliased by caller")
	}

	second := mustCreate(t, s, agent("ns1", "b", nil))
	r1, _ := strconv.ParseUint(got.GetResourceVersion(), 10, 64)
	r2, _ := strconv.ParseUint(second.GetResourceVersion(), 10, 64)
	if r2 <= r1 {
		t.Errorf("rv not increasing: %d then %d", r1, r2)
	}

	cases := []struct {
		name  string
		obj   *unstructured.Unstructured
		check func(error) bool
	}{
		{"exists", agent("ns1", "a", nil), apierrors.IsAlreadyExists},
		{"no name", agent("ns1", "", nil), apierrors.IsBadRequest},
		{"slash in namespace", agent("a/b", "x", nil), apierrors.IsBadRequest},
		{"slash in name", agent("ns1", "x/y", nil), apierrors.IsBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Create(ctxT(t), res, c.obj)
			if !c.check(err) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// TestClusterScopedObjects: an object without a namespace (a cluster-scoped
// kind) is stored, read and listed under the empty namespace, apart from the
// namespaced objects of the same resource name.
func TestClusterScopedObjects(t *testing.T) {
	s := storetest.Open(t, store.Options{})
	mustCreate(t, s, agent("", "gh", nil))
	mustCreate(t, s, agent("ns1", "gh", nil))
	got, err := s.Get(ctxT(t), res, "", "gh")
	if err != nil || got.GetNamespace() != "" || got.GetName() != "gh" {
		t.Fatalf("Get cluster-scoped = %v, %v", got, err)
	}
	list, err := s.List(ctxT(t), res, "", nil)
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("List all = %d items, %v; want 2", len(list.Items), err)
	}
	if _, err := s.Delete(ctxT(t), res, "", "gh", store.DeleteOptions{}); err != nil {
		t.Fatalf("Delete cluster-scoped: %v", err)
	}
	if _, err := s.Get(ctxT(t), res, "ns1", "gh"); err != nil {
		t.Fatalf("the namespaced object went with it: %v", err)
	}
}

func TestUpdateRules(t *testing.T) {
	type result struct {
		out *unstructured.Unstructured
		err error
	}
	cases := []struct {
		name   string
		mutate func(cur *unstructured.Unstructured)
		check  func(t *testing.T, s *store.Store, before *unstructured.Unstructured, r result)
	}{
		{
			name: "stale resourceVersion is a conflict",
			mutate: func(cur *unstructured.Unstructured) {
				cur.SetResourceVersion("1")
				cur.Object["spec"] = map[string]interface{}{"model": "other"}
			},
			check: func(t *testing.T, s *store.Store, before *unstructured.Unstructured, r result) {
				if !apierrors.IsConflict(r.err) {
					t.Fatalf("err = %v, want conflict", r.err)
				}
			},
		},
		{
			name: "empty resourceVersion is unconditional",
			mutate: func(cur *unstructured.Unstructured) {
				cur.SetResourceVersion("")
				cur.Object["spec"] = map[string]interface{}{"model": "other"}
			},
			check: func(t *testing.T, s *store.Store, before *unstructured.Unstructured, r result) {
				if r.err != nil || r.out.Object["spec"].(map[string]interface{})["model"] != "other" {
					t.Fatalf("err = %v out = %v", r.err, r.out)
				}
			},
		},
		{
			name: "status in update is ignored",
			mutate: func(cur *unstructured.Unstructured) {
				cur.Object["status"] = map[string]interface{}{"observedGeneration": int64(99)}
				cur.SetLabels(map[string]string{"x": "y"})
			},
			check: func(t *testing.T, s *store.Store, before *unstructured.Unstructured, r result) {
				if r.err != nil {
					t.Fatal(r.err)
				}
				if !equalJSON(r.out.Object["status"], before.Object["status"]) {
					t.Fatalf("status changed through update: %v", r.out.Object["status"])
				}
			},
		},
		{
			name: "spec change bumps generation",
			mutate: func(cur *unstructured.Unstructured) {
				cur.Object["spec"] = map[string]interface{}{"model": "bigger"}
			},
			check: func(t *testing.T, s *store.Store, before *unstructured.Unstructured, r result) {
				if r.err != nil || r.out.GetGeneration() != before.GetGeneration()+1 {
					t.Fatalf("err=%v generation %d → %d", r.err, before.GetGeneration(), r.out.GetGeneration())
				}
			},
		},
		{
			name: "metadata-only change keeps generation, new RV",
			mutate: func(cur *unstructured.Unstructured) {
				cur.SetAnnotations(map[string]string{"note": "hi"})
			},
			check: func(t *testing.T, s *store.Store, before *unstructured.Unstructured, r result) {
				if r.err != nil || r.out.GetGeneration() != before.GetGeneration() {
					t.Fatalf("err=%v generation %d → %d", r.err, before.GetGeneration(), r.out.GetGeneration())
				}
				if r.out.GetResourceVersion() == before.GetResourceVersion() || r.out.GetAnnotations()["note"] != "hi" {
					t.Fatalf("annotation update not written: %v", r.out)
				}
			},
		},
		{
			name:   "no-op update keeps RV and writes no event",
			mutate: func(cur *unstructured.Unstructured) {},
			check: func(t *testing.T, s *store.Store, before *unstructured.Unstructured, r result) {
				if r.err != nil || r.out.GetResourceVersion() != before.GetResourceVersion() {
					t.Fatalf("err=%v rv %s → %s", r.err, before.GetResourceVersion(), r.out.GetResourceVersion())
				}
				if strconv.FormatUint(s.CurrentRV(), 10) != before.GetResourceVersion() {
					t.Fatalf("store RV moved to %d", s.CurrentRV())
				}
				if h := historyTypes(t, s, "ns", "a"); len(h) != 2 { // ADDED + STATUS from setup
					t.Fatalf("history = %v", h)
				}
			},
		},
		{
			name: "no-op when only server-owned fields differ",
			mutate: func(cur *unstructured.Unstructured) {
				cur.SetGeneration(42)
				cur.SetUID("")
				cur.SetCreationTimestamp(metav1.NewTime(time.Unix(0, 0)))
				cur.SetLabels(map[string]string{}) // empty equals absent
			},
			check: func(t *testing.T, s *store.Store, before *unstructured.Unstructured, r result) {
				if r.err != nil || r.out.GetResourceVersion() != before.GetResourceVersion() ||
					r.out.GetGeneration() != before.GetGeneration() || r.out.GetUID() != before.GetUID() {
					t.Fatalf("err=%v out=%v", r.err, r.out)
				}
			},
		},
		{
			name: "foreign uid is a conflict",
			mutate: func(cur *unstructured.Unstructured) {
				cur.SetUID(types.UID("someone-else"))
				cur.Object["spec"] = map[string]interface{}{"model": "z"}
			},
			check: func(t *testing.T, s *store.Store, before *unstructured.Unstructured, r result) {
				if !apierrors.IsConflict(r.err) {
					t.Fatalf("err = %v", r.err)
				}
			},
		},
		{
			name: "absent object is not found",
			mutate: func(cur *unstructured.Unstructured) {
				cur.SetName("missing")
			},
			check: func(t *testing.T, s *store.Store, before *unstructured.Unstructured, r result) {
				if !apierrors.IsNotFound(r.err) {
					t.Fatalf("err = %v", r.err)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := storetest.Open(t, store.Options{})
			mustCreate(t, s, agent("ns", "a", map[string]interface{}{"model": "small"}))
			cur := mustGet(t, s, "ns", "a")
			cur.Object["status"] = map[string]interface{}{"ready": true}
			before, err := s.UpdateStatus(ctxT(t), res, cur)
			if err != nil {
				t.Fatal(err)
			}
			req := before.DeepCopy()
			c.mutate(req)
			out, err := s.Update(ctxT(t), res, req)
			c.check(t, s, before, result{out, err})
		})
	}
}

func equalJSON(a, b interface{}) bool {
	return strings.TrimSpace(toJSON(a)) == strings.TrimSpace(toJSON(b))
}

func TestUpdateStatus(t *testing.T) {
	s := storetest.Open(t, store.Options{})
	created := mustCreate(t, s, agent("ns", "a", map[string]interface{}{"model": "m"}))

	req := created.DeepCopy()
	req.Object["status"] = map[string]interface{}{"observedGeneration": int64(1)}
	req.Object["spec"] = map[string]interface{}{"model": "ignored"}
	req.SetLabels(map[string]string{"ignored": "yes"})
	out, err := s.UpdateStatus(ctxT(t), res, req)
	if err != nil {
		t.Fatal(err)
	}
	if out.GetGeneration() != 1 || out.Object["spec"].(map[string]interface{})["model"] != "m" || len(out.GetLabels()) != 0 {
		t.Fatalf("status write changed more than status: %v", out.Object)
	}
	if got, _, _ := unstructured.NestedInt64(out.Object, "status", "observedGeneration"); got != 1 {
		t.Fatalf("status not written: %v", out.Object["status"])
	}
	if out.GetResourceVersion() == created.GetResourceVersion() {
		t.Fatal("status write kept RV")
	}

	// Identical status: no-op.
	same, err := s.UpdateStatus(ctxT(t), res, out)
	if err != nil || same.GetResourceVersion() != out.GetResourceVersion() {
		t.Fatalf("no-op status write: err=%v rv %s → %s", err, out.GetResourceVersion(), same.GetResourceVersion())
	}
	// Stale RV: conflict.
	stale := created.DeepCopy()
	stale.Object["status"] = map[string]interface{}{"observedGeneration": int64(5)}
	if _, err := s.UpdateStatus(ctxT(t), res, stale); !apierrors.IsConflict(err) {
		t.Fatalf("stale status write: %v", err)
	}
	if got := historyTypes(t, s, "ns", "a"); strings.Join(got, ",") != "ADDED,STATUS" {
		t.Fatalf("history = %v", got)
	}
}

func TestDeleteWithFinalizers(t *testing.T) {
	s := storetest.Open(t, store.Options{})
	obj := agent("ns", "f", map[string]interface{}{"model": "m"})
	obj.SetFinalizers([]string{"aicli.dev/container"})
	created := mustCreate(t, s, obj)

	del, err := s.Delete(ctxT(t), res, "ns", "f", store.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if del.GetDeletionTimestamp() == nil {
		t.Fatal("deletionTimestamp not set")
	}
	if mustGet(t, s, "ns", "f").GetDeletionTimestamp() == nil {
		t.Fatal("object not terminating in store")
	}
	rvAfterFirst := s.CurrentRV()

	again, err := s.Delete(ctxT(t), res, "ns", "f", store.DeleteOptions{})
	if err != nil || again.GetResourceVersion() != del.GetResourceVersion() || s.CurrentRV() != rvAfterFirst {
		t.Fatalf("second delete while terminating: err=%v rv %s → %s", err, del.GetResourceVersion(), again.GetResourceVersion())
	}
	if _, err := s.Create(ctxT(t), res, agent("ns", "f", nil)); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create over terminating object: %v", err)
	}
	addFin := del.DeepCopy()
	addFin.SetFinalizers([]string{"aicli.dev/container", "new"})
	if _, err := s.Update(ctxT(t), res, addFin); !apierrors.IsInvalid(err) {
		t.Fatalf("adding finalizer while terminating: %v", err)
	}
	// Status writes still work while terminating.
	st := del.DeepCopy()
	st.Object["status"] = map[string]interface{}{"stopping": true}
	del, err = s.UpdateStatus(ctxT(t), res, st)
	if err != nil {
		t.Fatal(err)
	}

	rm := del.DeepCopy()
	rm.SetFinalizers(nil)
	gone, err := s.Update(ctxT(t), res, rm)
	if err != nil {
		t.Fatal(err)
	}
	if gone.GetUID() != created.GetUID() {
		t.Fatalf("wrong object returned: %v", gone)
	}
	if _, err := s.Get(ctxT(t), res, "ns", "f"); !apierrors.IsNotFound(err) {
		t.Fatalf("get after last finalizer removed: %v", err)
	}
	if _, err := s.Delete(ctxT(t), res, "ns", "f", store.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("delete after removal: %v", err)
	}
	if got := historyTypes(t, s, "ns", "f"); strings.Join(got, ",") != "ADDED,TERMINATING,STATUS,DELETED" {
		t.Fatalf("history = %v", got)
	}
	// The name is free again.
	mustCreate(t, s, agent("ns", "f", nil))
}

func TestDeletePlainAndPreconditions(t *testing.T) {
	s := storetest.Open(t, store.Options{})
	created := mustCreate(t, s, agent("ns", "d", nil))
	wrongUID := types.UID("nope")
	wrongRV := "12345"
	for _, c := range []struct {
		name string
		pre  *metav1.Preconditions
	}{
		{"uid", &metav1.Preconditions{UID: &wrongUID}},
		{"resourceVersion", &metav1.Preconditions{ResourceVersion: &wrongRV}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := s.Delete(ctxT(t), res, "ns", "d", store.DeleteOptions{Preconditions: c.pre}); !apierrors.IsConflict(err) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	uid := created.GetUID()
	rv := created.GetResourceVersion()
	out, err := s.Delete(ctxT(t), res, "ns", "d", store.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	if err != nil {
		t.Fatal(err)
	}
	if out.GetResourceVersion() != strconv.FormatUint(s.CurrentRV(), 10) {
		t.Fatalf("deleted object rv %s, store rv %d", out.GetResourceVersion(), s.CurrentRV())
	}
	if _, err := s.Get(ctxT(t), res, "ns", "d"); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
	if _, err := s.Delete(ctxT(t), res, "ns", "d", store.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestListNamespaceAndSelector(t *testing.T) {
	s := storetest.Open(t, store.Options{})
	for _, o := range []struct{ ns, name, team string }{
		{"b", "z", "red"}, {"a", "y", "red"}, {"a", "x", "blue"}, {"b", "w", ""},
	} {
		obj := agent(o.ns, o.name, nil)
		if o.team != "" {
			obj.SetLabels(map[string]string{"team": o.team})
		}
		mustCreate(t, s, obj)
	}
	mustCreate(t, s, storetest.Object("Grant", "a", "other-resource", nil)) // different resource
	if _, err := s.Create(ctxT(t), "grants", storetest.Object("Grant", "a", "g", nil)); err != nil {
		t.Fatal(err)
	}
	sel := func(q string) labels.Selector {
		l, err := labels.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, c := range []struct {
		name string
		ns   string
		sel  labels.Selector
		want string
	}{
		{"all", "", nil, "a/other-resource,a/x,a/y,b/w,b/z"},
		{"namespace", "a", nil, "a/other-resource,a/x,a/y"},
		{"selector", "", sel("team=red"), "a/y,b/z"},
		{"selector+ns", "b", sel("team=red"), "b/z"},
		{"exists", "", sel("team"), "a/x,a/y,b/z"},
		{"notin", "", sel("team notin (red)"), "a/other-resource,a/x,b/w"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := s.List(ctxT(t), res, c.ns, c.sel)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range l.Items {
				got = append(got, it.GetNamespace()+"/"+it.GetName())
			}
			if strings.Join(got, ",") != c.want {
				t.Fatalf("got %v want %s", got, c.want)
			}
			if l.GetResourceVersion() != strconv.FormatUint(s.CurrentRV(), 10) {
				t.Fatalf("list rv %s, current %d", l.GetResourceVersion(), s.CurrentRV())
			}
		})
	}
}

func TestConcurrentConflictsDecidedInOrder(t *testing.T) {
	s := storetest.Open(t, store.Options{})
	base := mustCreate(t, s, agent("ns", "c", map[string]interface{}{"n": int64(0)}))
	const n = 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, conflicts := 0, 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := base.DeepCopy()
			req.Object["spec"] = map[string]interface{}{"n": int64(i + 1)}
			_, err := s.Update(ctxT(t), res, req)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case apierrors.IsConflict(err):
				conflicts++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || conflicts != n-1 {
		t.Fatalf("wins=%d conflicts=%d", wins, conflicts)
	}
	if got := mustGet(t, s, "ns", "c").GetGeneration(); got != 2 {
		t.Fatalf("generation = %d", got)
	}
}

func TestHistorySurvivesCompactionAndDeletion(t *testing.T) {
	s := storetest.Open(t, store.Options{})
	c := mustCreate(t, s, agent("ns", "h", map[string]interface{}{"v": int64(1)}))
	c.Object["spec"] = map[string]interface{}{"v": int64(2)}
	u, err := s.Update(ctxT(t), res, c)
	if err != nil {
		t.Fatal(err)
	}
	u.Object["status"] = map[string]interface{}{"seen": int64(2)}
	if _, err := s.UpdateStatus(ctxT(t), res, u); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctxT(t), res, "ns", "h", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		mustCreate(t, s, agent("ns", "filler-"+strconv.Itoa(i), nil))
	}
	if err := s.Compact(ctxT(t), s.CurrentRV()); err != nil {
		t.Fatal(err)
	}
	h, err := s.History(ctxT(t), res, "ns", "h")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	var last uint64
	for _, e := range h {
		types = append(types, e.Type)
		if e.ResourceVersion <= last {
			t.Fatalf("history not ascending: %v", h)
		}
		last = e.ResourceVersion
		if e.Object.GetResourceVersion() != strconv.FormatUint(e.ResourceVersion, 10) || e.Time.IsZero() {
			t.Fatalf("event %d object rv %s time %v", e.ResourceVersion, e.Object.GetResourceVersion(), e.Time)
		}
	}
	if strings.Join(types, ",") != "ADDED,MODIFIED,STATUS,DELETED" {
		t.Fatalf("history types = %v", types)
	}
	if v, _, _ := unstructured.NestedInt64(h[1].Object.Object, "spec", "v"); v != 2 {
		t.Fatalf("MODIFIED snapshot = %v", h[1].Object.Object)
	}
	if got, _ := s.History(ctxT(t), res, "ns", "never"); len(got) != 0 {
		t.Fatalf("history of unknown object: %v", got)
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	obj := agent("ns", "keep", map[string]interface{}{"model": "m", "n": int64(3), "f": 1.5})
	obj.SetLabels(map[string]string{"a": "b"})
	obj.SetFinalizers([]string{"x"})
	c, err := s.Create(ctxT(t), res, obj)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctxT(t), res, "ns", "keep", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone, err := s.Create(ctxT(t), res, agent("ns", "gone", nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctxT(t), res, "ns", "gone", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKV(ctxT(t), "tokens", "t1", []byte("secret-hash")); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctxT(t), 3); err != nil {
		t.Fatal(err)
	}
	before := mustGet(t, s, "ns", "keep")
	rv := s.CurrentRV()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctxT(t), res, "ns", "keep"); err != nil {
		// Reads of the in-memory index still work after Close; writes do not.
		t.Logf("get after close: %v", err)
	}
	if _, err := s.Create(ctxT(t), res, agent("ns", "late", nil)); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("create after close: %v", err)
	}

	s2, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	if s2.CurrentRV() != rv {
		t.Fatalf("rv after reopen %d, want %d", s2.CurrentRV(), rv)
	}
	after := mustGet(t, s2, "ns", "keep")
	if toJSON(after.Object) != toJSON(before.Object) {
		t.Fatalf("object changed across reopen:\n%s\n%s", toJSON(before.Object), toJSON(after.Object))
	}
	if after.GetUID() != c.GetUID() || after.GetDeletionTimestamp() == nil {
		t.Fatalf("reopened object %v", after)
	}
	if _, err := s2.Get(ctxT(t), res, "ns", "gone"); !apierrors.IsNotFound(err) {
		t.Fatalf("deleted object after reopen: %v", err)
	}
	if h, _ := s2.History(ctxT(t), res, "ns", "gone"); len(h) != 2 || h[0].Object.GetUID() != gone.GetUID() {
		t.Fatalf("history after reopen: %v", h)
	}
	if v, err := s2.GetKV(ctxT(t), "tokens", "t1"); err != nil || string(v) != "secret-hash" {
		t.Fatalf("kv after reopen: %q %v", v, err)
	}
	if s2.CompactedFrom() != 3 {
		t.Fatalf("compact floor after reopen %d", s2.CompactedFrom())
	}
	// An update without changes is still a no-op after reopen (decoded
	// numbers compare equal to what was written).
	same, err := s2.Update(ctxT(t), res, after)
	if err != nil || same.GetResourceVersion() != after.GetResourceVersion() {
		t.Fatalf("no-op update after reopen: %v %v", err, same)
	}
	n, err := s2.Create(ctxT(t), res, agent("ns", "new", nil))
	if err != nil {
		t.Fatal(err)
	}
	if n.GetResourceVersion() != strconv.FormatUint(rv+1, 10) {
		t.Fatalf("first rv after reopen %s, want %d", n.GetResourceVersion(), rv+1)
	}
}

func TestSecondOpenIsLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Open(dir, store.Options{})
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	if !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "in use by another supervisor") {
		t.Fatalf("message lacks dir or reason: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	_ = s2.Close()
}
