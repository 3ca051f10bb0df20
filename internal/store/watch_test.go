package store_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/store/storetest"
)

func TestWatchFromZeroSendsSnapshotThenLive(t *testing.T) {
	for _, rv := range []string{"", "0"} {
		t.Run("rv="+rv, func(t *testing.T) {
			s := storetest.Open(t, store.Options{})
			mustCreate(t, s, agent("ns", "b", nil))
			mustCreate(t, s, agent("ns", "a", nil))
			mustCreate(t, s, agent("other", "c", nil))
			w, err := s.Watch(ctxT(t), res, "ns", store.WatchOptions{ResourceVersion: rv})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			for _, want := range []string{"a", "b"} {
				if ev := next(t, w); ev.Type != watch.Added || evName(ev) != want {
					t.Fatalf("got %s %s, want ADDED %s", ev.Type, evName(ev), want)
				}
			}
			expectQuiet(t, w, 50*time.Millisecond)
			name := "live" + rv
			c := mustCreate(t, s, agent("ns", name, nil))
			mustCreate(t, s, agent("other", name, nil)) // filtered by namespace
			ev := next(t, w)
			if ev.Type != watch.Added || evName(ev) != name ||
				ev.Object.(*unstructured.Unstructured).GetResourceVersion() != c.GetResourceVersion() {
				t.Fatalf("live event %s %v", ev.Type, ev.Object)
			}
			expectQuiet(t, w, 50*time.Millisecond)
		})
	}
}

func TestWatchReplayFromResourceVersion(t *testing.T) {
	cacheModes(t, testWatchReplayFromResourceVersion)
}

func testWatchReplayFromResourceVersion(t *testing.T, cache int) {
	s := storetest.Open(t, store.Options{WatchCache: cache})
	a := mustCreate(t, s, agent("ns", "a", map[string]interface{}{"v": int64(1)}))
	from := a.GetResourceVersion()
	a.Object["spec"] = map[string]interface{}{"v": int64(2)}
	a2, err := s.Update(ctxT(t), res, a)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, agent("ns", "b", nil))
	if _, err := s.Delete(ctxT(t), res, "ns", "b", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctxT(t), res, "", store.WatchOptions{ResourceVersion: from})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	want := []struct {
		typ  watch.EventType
		name string
	}{{watch.Modified, "a"}, {watch.Added, "b"}, {watch.Deleted, "b"}, {watch.Added, "c"}, {watch.Modified, "a"}}
	// Live events after the replay, written while the watch is open.
	go func() {
		mustCreate(t, s, agent("ns", "c", nil))
		a2.Object["status"] = map[string]interface{}{"ok": true}
		if _, err := s.UpdateStatus(context.Background(), res, a2); err != nil {
			t.Error(err)
		}
	}()
	var last uint64
	for i, wnt := range want {
		ev := next(t, w)
		rv, _ := strconv.ParseUint(ev.Object.(*unstructured.Unstructured).GetResourceVersion(), 10, 64)
		if ev.Type != wnt.typ || evName(ev) != wnt.name || rv <= last {
			t.Fatalf("event %d: got %s %s rv %d, want %s %s after %d", i, ev.Type, evName(ev), rv, wnt.typ, wnt.name, last)
		}
		last = rv
	}
	expectQuiet(t, w, 50*time.Millisecond)
}

func TestWatchFromCompactedRVIsGone(t *testing.T) { cacheModes(t, testWatchFromCompactedRVIsGone) }

func testWatchFromCompactedRVIsGone(t *testing.T, cache int) {
	s := storetest.Open(t, store.Options{WatchCache: cache})
	for i := range 10 {
		mustCreate(t, s, agent("ns", fmt.Sprintf("o%d", i), nil))
	}
	if err := s.Compact(ctxT(t), 6); err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctxT(t), res, "", store.WatchOptions{ResourceVersion: "3"})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("watch from compacted rv: w=%v err=%v", w, err)
	}
	if w != nil {
		t.Fatal("watch returned alongside error")
	}
	if want := "too old resource version: 3 (oldest available 5)"; err.Error() != want {
		t.Fatalf("message %q, want %q", err.Error(), want)
	}
	// The oldest available RV still works and replays exactly the rest.
	w, err = s.Watch(ctxT(t), res, "", store.WatchOptions{ResourceVersion: "5"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := 5; i < 10; i++ {
		if ev := next(t, w); evName(ev) != fmt.Sprintf("o%d", i) {
			t.Fatalf("replay got %s", evName(ev))
		}
	}
	expectQuiet(t, w, 50*time.Millisecond)
	if _, err := s.Watch(ctxT(t), res, "", store.WatchOptions{ResourceVersion: "x"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("bad rv: %v", err)
	}
}

func TestAutomaticCompaction(t *testing.T) { cacheModes(t, testAutomaticCompaction) }

func testAutomaticCompaction(t *testing.T, cache int) {
	s := storetest.Open(t, store.Options{CompactRetain: 20, WatchCache: cache})
	for i := range 60 {
		mustCreate(t, s, agent("ns", fmt.Sprintf("o%d", i), nil))
	}
	floor := s.CompactedFrom()
	if floor <= 1 || s.CurrentRV()-floor+1 > 21+1 {
		t.Fatalf("floor %d at rv %d: retain not enforced", floor, s.CurrentRV())
	}
	if _, err := s.Watch(ctxT(t), res, "", store.WatchOptions{ResourceVersion: "1"}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch below auto floor: %v", err)
	}
	w, err := s.Watch(ctxT(t), res, "", store.WatchOptions{ResourceVersion: strconv.FormatUint(floor-1, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := next(t, w); evName(ev) != fmt.Sprintf("o%d", floor-1) {
		t.Fatalf("first replayed %s, floor %d", evName(ev), floor)
	}
}

func TestWatchBookmarks(t *testing.T) {
	s := storetest.Open(t, store.Options{BookmarkInterval: 20 * time.Millisecond})
	w, err := s.Watch(ctxT(t), res, "ns", store.WatchOptions{AllowBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Writes to another resource advance the store RV; bookmarks follow it.
	if _, err := s.Create(ctxT(t), "grants", storetest.Object("Grant", "ns", "g", nil)); err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatUint(s.CurrentRV(), 10)
	deadline := time.Now().Add(5 * time.Second)
	for {
		ev := next(t, w)
		if ev.Type != watch.Bookmark {
			t.Fatalf("unexpected %s", ev.Type)
		}
		u := ev.Object.(*unstructured.Unstructured)
		if u.GetResourceVersion() == want {
			if len(u.Object) != 1 {
				t.Fatalf("bookmark carries more than metadata: %v", u.Object)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no bookmark at rv %s", want)
		}
	}
	// Without AllowBookmarks there are none.
	w2, err := s.Watch(ctxT(t), res, "ns", store.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	select {
	case ev := <-w2.ResultChan():
		t.Fatalf("unexpected event %s", ev.Type)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestWatchLabelSelectorTransitions(t *testing.T) {
	cacheModes(t, testWatchLabelSelectorTransitions)
}

func testWatchLabelSelectorTransitions(t *testing.T, cache int) {
	s := storetest.Open(t, store.Options{WatchCache: cache})
	sel, err := labels.Parse("team=red")
	if err != nil {
		t.Fatal(err)
	}
	pre := agent("ns", "pre", nil)
	pre.SetLabels(map[string]string{"team": "red"})
	mustCreate(t, s, pre)
	mustCreate(t, s, agent("ns", "plain", nil))
	from := strconv.FormatUint(s.CurrentRV(), 10)

	steps := func(t *testing.T) {
		o := mustCreate(t, s, agent("ns", "o", nil)) // not selected: nothing
		o.SetLabels(map[string]string{"team": "red"})
		o, err = s.Update(ctxT(t), res, o) // enters: ADDED
		if err != nil {
			t.Fatal(err)
		}
		o.SetAnnotations(map[string]string{"k": "v"})
		o, err = s.Update(ctxT(t), res, o) // stays: MODIFIED
		if err != nil {
			t.Fatal(err)
		}
		o.SetLabels(map[string]string{"team": "blue"})
		o, err = s.Update(ctxT(t), res, o) // leaves: DELETED
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctxT(t), res, "ns", "o", store.DeleteOptions{}); err != nil { // not selected: nothing
			t.Fatal(err)
		}
	}
	expect := func(t *testing.T, w watch.Interface) {
		for _, want := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted} {
			if ev := next(t, w); ev.Type != want || evName(ev) != "o" {
				t.Fatalf("got %s %s, want %s o", ev.Type, evName(ev), want)
			}
		}
		expectQuiet(t, w, 50*time.Millisecond)
	}
	// Live delivery.
	w, err := s.Watch(ctxT(t), res, "", store.WatchOptions{ResourceVersion: from, LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	steps(t)
	expect(t, w)
	// Replay from the log gives the same view.
	w2, err := s.Watch(ctxT(t), res, "", store.WatchOptions{ResourceVersion: from, LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	expect(t, w2)
	// Snapshot with a selector lists only the selected objects.
	w3, err := s.Watch(ctxT(t), res, "", store.WatchOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	defer w3.Stop()
	if ev := next(t, w3); evName(ev) != "pre" {
		t.Fatalf("snapshot: %s", evName(ev))
	}
	expectQuiet(t, w3, 50*time.Millisecond)
}

func TestSlowWatcherGetsErrorNotBlockingWriters(t *testing.T) {
	cacheModes(t, testSlowWatcherGetsErrorNotBlockingWriters)
}

func testSlowWatcherGetsErrorNotBlockingWriters(t *testing.T, cache int) {
	s := storetest.Open(t, store.Options{WatchBuffer: 8, WatchCache: cache})
	slow, err := s.Watch(ctxT(t), res, "", store.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	fast, err := s.Watch(ctxT(t), res, "", store.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	const n = 200
	var fastGot []string
	var fastWG sync.WaitGroup
	fastWG.Add(1)
	// The writer lets the fast watcher take each event before the next
	// write, so that it keeps up with its 8-event buffer however the
	// goroutines are scheduled; the slow one reads nothing.
	seen := make(chan struct{}, 1)
	go func() {
		defer fastWG.Done()
		for ev := range fast.ResultChan() {
			fastGot = append(fastGot, evName(ev))
			seen <- struct{}{}
			if len(fastGot) == n {
				return
			}
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			if _, err := s.Create(context.Background(), res, agent("ns", fmt.Sprintf("o%03d", i), nil)); err != nil {
				t.Error(err)
				return
			}
			select {
			case <-seen:
			case <-time.After(10 * time.Second):
				t.Errorf("fast watcher did not receive event %d", i)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("writers blocked by a slow watcher")
	}
	fastWG.Wait()
	if len(fastGot) != n {
		t.Fatalf("fast watcher got %d events", len(fastGot))
	}
	// The slow watcher now reads: some events, then a 410 error, then close.
	var got int
	var last watch.Event
	for ev := range slow.ResultChan() {
		last = ev
		if ev.Type == watch.Error {
			break
		}
		got++
	}
	if last.Type != watch.Error {
		t.Fatalf("slow watcher ended without error after %d events", got)
	}
	st, ok := last.Object.(*metav1.Status)
	if !ok || st.Code != 410 {
		t.Fatalf("error object %#v", last.Object)
	}
	wantMsg := fmt.Sprintf("watcher fell behind, re-watch from %d", got) // rv i+1 ↔ object o%03d(i)
	if st.Message != wantMsg {
		t.Fatalf("message %q, want %q", st.Message, wantMsg)
	}
	if got >= n {
		t.Fatalf("slow watcher received everything (%d); buffer not bounded", got)
	}
	// Re-watching from the named RV yields exactly the missing events.
	w, err := s.Watch(ctxT(t), res, "", store.WatchOptions{ResourceVersion: strconv.Itoa(got)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := got; i < n; i++ {
		if ev := next(t, w); evName(ev) != fmt.Sprintf("o%03d", i) {
			t.Fatalf("rewatch got %s want o%03d", evName(ev), i)
		}
	}
}

func TestWatchEndsOnStopContextAndClose(t *testing.T) {
	s, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed := func(w watch.Interface) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case _, ok := <-w.ResultChan():
				if !ok {
					return
				}
			case <-deadline:
				t.Fatal("result channel not closed")
			}
		}
	}
	w1, err := s.Watch(ctxT(t), res, "", store.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w1.Stop()
	closed(w1)
	ctx, cancel := context.WithCancel(context.Background())
	w2, err := s.Watch(ctx, res, "", store.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	closed(w2)
	w3, err := s.Watch(ctxT(t), res, "", store.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	closed(w3)
	if _, err := s.Watch(ctxT(t), res, "", store.WatchOptions{}); err == nil {
		t.Fatal("watch after close succeeded")
	}
}

func TestWatchDeliversEveryEventOnceInOrderUnderConcurrency(t *testing.T) {
	cacheModes(t, testWatchDeliversEveryEventOnceInOrderUnderConcurrency)
}

func testWatchDeliversEveryEventOnceInOrderUnderConcurrency(t *testing.T, cache int) {
	s := storetest.Open(t, store.Options{WatchCache: cache})
	mustCreate(t, s, agent("ns", "seed", nil))
	fromStart, err := s.Watch(ctxT(t), res, "", store.WatchOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer fromStart.Stop()
	const writers, perWriter = 16, 30
	var wg sync.WaitGroup
	var midRV atomic.Uint64
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				o, err := s.Create(context.Background(), res, agent("ns", fmt.Sprintf("w%d-%d", w, i), nil))
				if err != nil {
					t.Error(err)
					return
				}
				o.SetLabels(map[string]string{"i": strconv.Itoa(i)})
				if _, err := s.Update(context.Background(), res, o); err != nil {
					t.Error(err)
					return
				}
				if w == 0 && i == perWriter/2 {
					midRV.Store(s.CurrentRV())
				}
			}
		}()
	}
	wg.Wait()
	total := 1 + writers*perWriter*2
	if s.CurrentRV() != uint64(total) {
		t.Fatalf("rv %d, want %d", s.CurrentRV(), total)
	}
	collect := func(w watch.Interface, n int) []uint64 {
		var rvs []uint64
		for len(rvs) < n {
			ev := next(t, w)
			rv, _ := strconv.ParseUint(ev.Object.(*unstructured.Unstructured).GetResourceVersion(), 10, 64)
			rvs = append(rvs, rv)
		}
		expectQuiet(t, w, 50*time.Millisecond)
		return rvs
	}
	// The snapshot watch saw "seed" as ADDED at rv 1, then every later event.
	got := collect(fromStart, total)
	for i, rv := range got {
		if rv != uint64(i+1) {
			t.Fatalf("snapshot+live watch: event %d has rv %d", i, rv)
		}
	}
	// A replay from the middle sees exactly the rest, in order.
	mid := midRV.Load()
	w2, err := s.Watch(ctxT(t), res, "", store.WatchOptions{ResourceVersion: strconv.FormatUint(mid, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	got = collect(w2, total-int(mid))
	for i, rv := range got {
		if rv != mid+uint64(i)+1 {
			t.Fatalf("replay from %d: event %d has rv %d", mid, i, rv)
		}
	}
}

func TestCanceledContext(t *testing.T) {
	s := storetest.Open(t, store.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Create(ctx, res, agent("ns", "x", nil)); !errors.Is(err, context.Canceled) {
		t.Fatalf("create with canceled ctx: %v", err)
	}
	if _, err := s.Get(ctx, res, "ns", "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("get with canceled ctx: %v", err)
	}
}

func TestWatchSendInitialEventsEndsWithBookmark(t *testing.T) {
	s := storetest.Open(t, store.Options{})
	mustCreate(t, s, agent("ns", "a", nil))
	mustCreate(t, s, agent("ns", "b", nil))
	snapRV := strconv.FormatUint(s.CurrentRV(), 10)
	w, err := s.Watch(ctxT(t), res, "", store.WatchOptions{SendInitialEvents: true, AllowBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, want := range []string{"a", "b"} {
		if ev := next(t, w); ev.Type != watch.Added || evName(ev) != want {
			t.Fatalf("got %s %s", ev.Type, evName(ev))
		}
	}
	ev := next(t, w)
	u, _ := ev.Object.(*unstructured.Unstructured)
	if ev.Type != watch.Bookmark || u.GetResourceVersion() != snapRV ||
		u.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("initial-events-end bookmark: %s %v", ev.Type, ev.Object)
	}
	c := mustCreate(t, s, agent("ns", "c", nil))
	if ev := nextNonBookmark(t, w); ev.Type != watch.Added || evName(ev) != "c" ||
		ev.Object.(*unstructured.Unstructured).GetResourceVersion() != c.GetResourceVersion() {
		t.Fatalf("live after initial events: %s %v", ev.Type, ev.Object)
	}
}

// cacheModes runs a replay test once served by the in-memory watch cache
// and once from pebble's log.
func cacheModes(t *testing.T, f func(t *testing.T, cache int)) {
	for _, m := range []struct {
		name  string
		cache int
	}{{"cache", 0}, {"pebble", -1}} {
		t.Run(m.name, func(t *testing.T) { f(t, m.cache) })
	}
}

func TestWatchReplayBeyondCacheFallsBackToLog(t *testing.T) {
	s := storetest.Open(t, store.Options{WatchCache: 4})
	for i := range 20 {
		mustCreate(t, s, agent("ns", fmt.Sprintf("o%02d", i), nil))
	}
	for _, from := range []int{2, 17} { // log, cache
		w, err := s.Watch(ctxT(t), res, "", store.WatchOptions{ResourceVersion: strconv.Itoa(from)})
		if err != nil {
			t.Fatal(err)
		}
		for i := from; i < 20; i++ {
			if ev := next(t, w); evName(ev) != fmt.Sprintf("o%02d", i) {
				t.Fatalf("from %d: got %s want o%02d", from, evName(ev), i)
			}
		}
		expectQuiet(t, w, 30*time.Millisecond)
		w.Stop()
	}
}

// TestReplayFromInsideLoggedGroups checks the watch log's group entries:
// with concurrent writers sharing groups, a replay from the log (cache off,
// store reopened) from every resourceVersion yields exactly the later
// events in order, also after compaction floors that fall inside a group.
func TestReplayFromInsideLoggedGroups(t *testing.T) {
	dir := t.TempDir()
	opts := store.Options{WatchCache: -1}
	s, err := store.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 48, 4
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				if _, err := s.Create(ctxT(t), res, agent("ns", fmt.Sprintf("w%d-%d", i, j), nil)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if st := s.Stats(); st.Events <= st.SyncedGroups {
		t.Fatalf("no group held two events (%+v): the test exercises nothing", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = storetest.OpenDir(t, dir, opts)
	n := int(s.CurrentRV())
	if n != writers*each {
		t.Fatalf("rv %d after %d creates", n, writers*each)
	}
	replayFrom := func(from int) {
		t.Helper()
		w, err := s.Watch(ctxT(t), res, "", store.WatchOptions{ResourceVersion: strconv.Itoa(from)})
		if err != nil {
			t.Fatalf("watch from %d: %v", from, err)
		}
		defer w.Stop()
		for want := from + 1; want <= n; want++ {
			ev := next(t, w)
			if rv := ev.Object.(*unstructured.Unstructured).GetResourceVersion(); ev.Type != watch.Added || rv != strconv.Itoa(want) {
				t.Fatalf("replay from %d: got %s rv %s, want ADDED rv %d", from, ev.Type, rv, want)
			}
		}
		expectQuiet(t, w, time.Millisecond)
	}
	for from := 1; from < n; from++ { // "0" is a list, not a replay
		replayFrom(from)
	}
	for floor := 3; floor <= n; floor++ {
		if err := s.Compact(ctxT(t), uint64(floor)); err != nil {
			t.Fatal(err)
		}
		replayFrom(floor - 1)
		if _, err := s.Watch(ctxT(t), res, "", store.WatchOptions{ResourceVersion: strconv.Itoa(floor - 2)}); !apierrors.IsResourceExpired(err) {
			t.Fatalf("watch from %d below floor %d: %v", floor-2, floor, err)
		}
	}
}
