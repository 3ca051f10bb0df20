package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// WatchOptions select where a watch starts and what it delivers.
type WatchOptions struct {
	// ResourceVersion "" or "0" starts with ADDED events for the current
	// matching objects; any other value replays events after it.
	ResourceVersion string
	// LabelSelector filters objects; nil means everything.
	LabelSelector labels.Selector
	// AllowBookmarks enables periodic watch.Bookmark events whose object
	// carries only metadata.resourceVersion.
	AllowBookmarks bool
	// SendInitialEvents (with ResourceVersion "" or "0") ends the initial
	// ADDED events with a Bookmark annotated
	// metav1.InitialEventsAnnotationKey="true" at the snapshot's
	// resourceVersion, as Kubernetes' WatchList does, so client-go
	// reflectors using WatchList semantics can sync from a plain Watch.
	SendInitialEvents bool
}

// resultBuffer lets a watcher's goroutine run a few events ahead of its
// consumer, so delivery does not need both scheduled at once.
const resultBuffer = 16

// watcher is one open watch. The publisher pushes events into in without
// blocking; the watcher's goroutine filters and forwards them.
type watcher struct {
	s          *Store
	resource   string
	ns         string
	sel        labels.Selector
	everything bool
	bookmarks  bool
	initialEnd bool

	in         chan *event
	fellBehind atomic.Bool
	result     chan watch.Event
	stop       chan struct{}
	stopOnce   sync.Once

	// startRV: only events with seq > startRV are delivered live.
	startRV  uint64
	snapshot []snapItem       // initial ADDED objects (ResourceVersion "" / "0")
	iter     *pebble.Iterator // replay of the log (explicit ResourceVersion)
	cached   []*event         // replay from the watch cache instead of iter
}

// Stop ends the watch; ResultChan is closed soon after.
func (w *watcher) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

// ResultChan delivers the watch events.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Watch streams changes of resource in namespace ("" = all namespaces).
// A ResourceVersion older than the compacted watch log fails with 410
// (IsResourceExpired) before any event. A watcher that falls more than
// Options.WatchBuffer events behind receives a watch.Error event carrying a
// 410 *metav1.Status ("watcher fell behind, re-watch from X") and its result
// channel is closed; it never blocks writers. The watch ends when ctx ends,
// on Stop, or on Close.
func (s *Store) Watch(ctx context.Context, resource, namespace string, opts WatchOptions) (watch.Interface, error) {
	if err := checkSegment("resource", resource); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	var from uint64
	replay := opts.ResourceVersion != "" && opts.ResourceVersion != "0"
	if replay {
		v, err := strconv.ParseUint(opts.ResourceVersion, 10, 64)
		if err != nil {
			return nil, badRequest("invalid resourceVersion %q: must be a decimal integer", opts.ResourceVersion)
		}
		from = v
	}
	sel := opts.LabelSelector
	if sel == nil {
		sel = labels.Everything()
	}
	w := &watcher{
		s: s, resource: resource, ns: namespace, sel: sel, everything: sel.Empty(),
		bookmarks:  opts.AllowBookmarks,
		initialEnd: opts.SendInitialEvents && !replay,
		in:         make(chan *event, s.opts.WatchBuffer),
		result:     make(chan watch.Event, resultBuffer),
		stop:       make(chan struct{}),
	}

	s.mu.Lock()
	select {
	case <-s.closing:
		s.mu.Unlock()
		return nil, ErrClosed
	default:
	}
	cur := s.rv.Load()
	if replay {
		if from+1 < s.compactFrom {
			oldest := s.compactFrom - 1
			s.mu.Unlock()
			return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (oldest available %d)", from, oldest))
		}
		if from < cur && len(s.recent) > 0 && s.recent[0].seq <= from+1 {
			i := sort.Search(len(s.recent), func(i int) bool { return s.recent[i].seq > from })
			w.cached = s.recent[i:len(s.recent):len(s.recent)]
		} else if from < cur {
			it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixEvent), UpperBound: eventKey(cur + 1)})
			if err != nil {
				s.mu.Unlock()
				return nil, fmt.Errorf("store: watch replay: %w", err)
			}
			w.iter = it
		}
		w.startRV = max(from, cur)
	} else {
		for k, sl := range s.index[resource] {
			e := sl.pub
			if e == nil || (namespace != "" && k.ns != namespace) {
				continue
			}
			if !w.everything && !sel.Matches(labels.Set(e.labels)) {
				continue
			}
			w.snapshot = append(w.snapshot, snapItem{k, e})
		}
		w.startRV = cur
	}
	s.watchers[w] = struct{}{}
	s.watchWG.Add(1)
	s.mu.Unlock()

	go w.run(ctx, from)
	return w, nil
}

// readLogEntry resolves a watch-log value (the history key) to its event.
func (s *Store) readLogEntry(historyKey []byte) (*event, error) {
	rec, err := s.getRaw(historyKey)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, fmt.Errorf("store: watch log points at missing history entry %q", historyKey)
	}
	return decodeRecord(historyKey, rec)
}

// remember appends published events to the watch cache; called under s.mu.
func (s *Store) remember(events []*event) {
	limit := s.opts.WatchCache
	if limit <= 0 || len(events) == 0 {
		return
	}
	s.recent = append(s.recent, events...)
	if len(s.recent) > 2*limit {
		// Copy into a new array: watchers may still hold the old one.
		s.recent = append([]*event(nil), s.recent[len(s.recent)-limit:]...)
	}
}

// fanout offers events to watchers; called by the publisher under s.mu.
func (s *Store) fanout(events []*event) {
	if len(s.watchers) == 0 {
		return
	}
	for _, ev := range events {
		for w := range s.watchers {
			if w.resource != ev.resource || (w.ns != "" && w.ns != ev.ns) {
				continue
			}
			select {
			case w.in <- ev:
			default:
				w.fellBehind.Store(true)
				close(w.in)
				delete(s.watchers, w)
			}
		}
	}
}

func (w *watcher) run(ctx context.Context, from uint64) {
	defer w.s.watchWG.Done()
	defer close(w.result)
	defer func() {
		if w.iter != nil {
			_ = w.iter.Close()
		}
	}()
	defer func() {
		w.s.mu.Lock()
		delete(w.s.watchers, w)
		w.s.mu.Unlock()
	}()
	send := func(e watch.Event) bool {
		select {
		case w.result <- e:
			return true
		case <-w.stop:
			return false
		case <-ctx.Done():
			return false
		}
	}

	lastSeen := w.startRV
	if w.cached != nil {
		cached := w.cached
		w.cached = nil
		for _, ev := range cached {
			if out, ok := w.translate(ev); ok && !send(out) {
				return
			}
		}
	} else if w.iter != nil {
		if !w.replay(from, send) {
			return
		}
		_ = w.iter.Close()
		w.iter = nil
	} else if from == 0 {
		snap := w.snapshot
		w.snapshot = nil
		sort.Slice(snap, func(i, j int) bool {
			a, b := snap[i].k, snap[j].k
			if a.ns != b.ns {
				return a.ns < b.ns
			}
			return a.name < b.name
		})
		for _, it := range snap {
			obj, err := it.e.data.object()
			if err != nil {
				send(errorEvent(apierrors.NewInternalError(err)))
				return
			}
			if !send(watch.Event{Type: watch.Added, Object: obj.DeepCopy()}) {
				return
			}
		}
		if w.initialEnd {
			ev := bookmarkEvent(w.startRV)
			ev.Object.(*unstructured.Unstructured).SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
			if !send(ev) {
				return
			}
		}
	}

	var tick <-chan time.Time
	if w.bookmarks {
		t := time.NewTicker(w.s.opts.BookmarkInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case ev, ok := <-w.in:
			if !ok {
				if w.fellBehind.Load() {
					send(errorEvent(apierrors.NewResourceExpired(
						fmt.Sprintf("watcher fell behind, re-watch from %d", lastSeen))))
				}
				return
			}
			if ev.seq <= w.startRV {
				continue
			}
			lastSeen = ev.seq
			if out, ok := w.translate(ev); ok && !send(out) {
				return
			}
		case <-tick:
			if !send(w.bookmark(lastSeen)) {
				return
			}
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

// errStopReplay ends a replay whose watcher went away.
var errStopReplay = errors.New("watch ended")

// replay sends the logged events after from up to startRV; false means the
// watch ended (an error event was sent, or the watcher went away). Log
// entries hold groups of events, so it starts at the entry holding from+1.
func (w *watcher) replay(from uint64, send func(watch.Event) bool) bool {
	it := w.iter
	valid := it.SeekLT(eventKey(from + 2))
	if !valid {
		valid = it.First()
	}
	var err error
	for ; valid && err == nil; valid = it.Next() {
		err = forEachLogEvent(it.Value(), func(hk []byte) error {
			_, _, _, seq, err := splitHistoryKey(hk)
			if err != nil || seq <= from || seq > w.startRV {
				return err
			}
			ev, err := w.s.readLogEntry(hk)
			if err != nil {
				return err
			}
			if out, ok := w.translate(ev); ok && !send(out) {
				return errStopReplay
			}
			return nil
		})
	}
	if err == nil {
		err = it.Error()
	}
	switch {
	case err == nil:
		return true
	case errors.Is(err, errStopReplay):
		return false
	default:
		w.s.log.Error("watch replay failed", "err", err)
		send(errorEvent(apierrors.NewInternalError(fmt.Errorf("watch replay: %w", err))))
		return false
	}
}

// bookmark reports the newest resourceVersion this watcher has fully
// consumed: the store's current one when nothing is queued for it.
func (w *watcher) bookmark(lastSeen uint64) watch.Event {
	w.s.mu.RLock()
	rv := lastSeen
	if len(w.in) == 0 {
		rv = max(rv, w.s.rv.Load())
	}
	w.s.mu.RUnlock()
	return bookmarkEvent(rv)
}

func bookmarkEvent(rv uint64) watch.Event {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetResourceVersion(strconv.FormatUint(rv, 10))
	return watch.Event{Type: watch.Bookmark, Object: u}
}

func errorEvent(err *apierrors.StatusError) watch.Event {
	st := err.ErrStatus
	return watch.Event{Type: watch.Error, Object: &st}
}

// translate maps a log event to what this watcher should see, if anything.
func (w *watcher) translate(ev *event) (watch.Event, bool) {
	if ev.resource != w.resource || (w.ns != "" && ev.ns != w.ns) {
		return watch.Event{}, false
	}
	newMatch, oldMatch := true, true
	if !w.everything {
		newMatch = w.sel.Matches(labels.Set(ev.labels))
		oldMatch = newMatch
		if ev.labelsChanged {
			oldMatch = w.sel.Matches(labels.Set(ev.prevLabels))
		}
	}
	var t watch.EventType
	switch ev.typ {
	case TypeAdded:
		if !newMatch {
			return watch.Event{}, false
		}
		t = watch.Added
	case TypeDeleted:
		if !oldMatch {
			return watch.Event{}, false
		}
		t = watch.Deleted
	default:
		switch {
		case oldMatch && newMatch:
			t = watch.Modified
		case oldMatch:
			t = watch.Deleted
		case newMatch:
			t = watch.Added
		default:
			return watch.Event{}, false
		}
	}
	obj, err := ev.data.object()
	if err != nil {
		return errorEvent(apierrors.NewInternalError(err)), true
	}
	return watch.Event{Type: t, Object: obj.DeepCopy()}, true
}

// snapItem is one object of a watch's initial snapshot.
type snapItem struct {
	k nsName
	e *entry
}
