package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group every stored resource belongs to; errors carry it.
const Group = "aicli.dev"

// Defaults for Options.
const (
	DefaultWatchBuffer      = 1024
	DefaultBookmarkInterval = time.Second
	DefaultCompactRetain    = 100_000
	DefaultWatchCache       = 4096
)

// maxGroup bounds how many mutations share one batch.
const maxGroup = 1024

// ErrLocked is returned (wrapped, with the directory) by Open when another
// process or another Store in this process holds the data dir.
var ErrLocked = errors.New("data dir is in use by another supervisor (pebble LOCK held)")

// ErrClosed is returned by operations on a closed Store.
var ErrClosed = errors.New("store: closed")

type lockedError struct {
	dir   string
	cause error
}

func (e *lockedError) Error() string {
	return fmt.Sprintf("data dir %s is in use by another supervisor (pebble LOCK held): %v", e.dir, e.cause)
}
func (e *lockedError) Is(target error) bool { return target == ErrLocked }
func (e *lockedError) Unwrap() error        { return e.cause }

// Options configure a Store. The zero value is usable.
type Options struct {
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Clock supplies timestamps (creationTimestamp, deletionTimestamp,
	// history times); nil means time.Now.
	Clock func() time.Time
	// WatchBuffer is the number of events a watcher may lag behind before
	// its watch is ended with a 410 error; 0 means DefaultWatchBuffer.
	WatchBuffer int
	// BookmarkInterval is the period of bookmark events for watches that
	// allow them; 0 means DefaultBookmarkInterval.
	BookmarkInterval time.Duration
	// CompactRetain is how many events the watch log keeps; older ones are
	// trimmed automatically. 0 means DefaultCompactRetain, negative disables
	// automatic trimming.
	CompactRetain int
	// WatchCache is how many recent events are kept in memory to serve
	// watches that resume from a recent resourceVersion without reading
	// pebble; 0 means DefaultWatchCache, negative disables the cache.
	WatchCache int
	// MemTableSize overrides pebble's memtable size (bytes); 0 keeps 64 MiB.
	MemTableSize uint64
	// CacheSize overrides the size of pebble's block cache (bytes, memory outside the Go heap filled by reads of
	// flushed tables); 0 keeps pebble's 8 MiB.
	CacheSize int64
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.WatchBuffer <= 0 {
		o.WatchBuffer = DefaultWatchBuffer
	}
	if o.BookmarkInterval <= 0 {
		o.BookmarkInterval = DefaultBookmarkInterval
	}
	if o.CompactRetain == 0 {
		o.CompactRetain = DefaultCompactRetain
	}
	if o.WatchCache == 0 {
		o.WatchCache = DefaultWatchCache
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = 64 << 20
	}
}

// objKey addresses one object.
type objKey struct {
	resource, ns, name string
}

// nsName addresses an object inside one resource's index.
type nsName struct {
	ns, name string
}

// Store is an open event store. All methods are safe for concurrent use.
type Store struct {
	dir  string
	opts Options
	db   *pebble.DB
	lock *pebble.Lock
	log  *slog.Logger

	mutCh chan *mutation
	// pubMu orders publication: groups applied to pebble wait in pending
	// until their WAL sync is done, then are published strictly in order.
	pubMu         sync.Mutex
	pending       []*group
	syncedThrough uint64        // highest group index known to be synced
	published     uint64        // highest group index published (acknowledged)
	pubNotify     chan struct{} // closed on the next publication, if waited on
	// appliedGroups is the index of the last group handed to pebble; stored
	// before the apply, so a reader that loads it after opening an iterator
	// covers everything that iterator can see.
	appliedGroups atomic.Uint64
	awaitWG       sync.WaitGroup
	closing       chan struct{} // closed by Close: no new mutations
	stopped       chan struct{} // closed when every accepted mutation is acknowledged
	closeMu       sync.Mutex
	closed        bool
	failed        atomic.Pointer[error]

	// w is owned by the writer goroutine.
	w writerState

	// mu guards the published state below.
	mu sync.RWMutex
	// index maps resource → address → slot. Only the writer goroutine
	// changes the maps (holding mu); readers hold mu for reading, the
	// writer reads them without it.
	index       map[string]map[nsName]*slot
	compactFrom uint64 // first retained watch-log seq
	watchers    map[*watcher]struct{}
	recent      []*event      // last published events, ascending seq (watch cache)
	rv          atomic.Uint64 // last published seq; written under mu
	watchWG     sync.WaitGroup

	stats struct{ groups, synced, mutations, events atomic.Uint64 }
	// encBufs holds *[]byte scratch buffers for encoding in callers'
	// goroutines; mutPool holds acknowledged Create mutations for reuse.
	encBufs, mutPool sync.Pool

	// dbMu keeps direct pebble readers (History) out while Close closes db.
	dbMu     sync.RWMutex
	dbClosed bool
}

// slot is one object address in the index. cur is the writer's view,
// including groups applied to pebble but not yet durable (writer goroutine
// only); pub is the published, durable version readers see (written under
// mu). A slot whose pub is nil is invisible to readers; the writer removes
// slots that are empty in both views (see sweep).
type slot struct {
	cur, pub *entry
}

// entry is one current object; data is immutable once published.
type entry struct {
	data   *objData
	rv     uint64
	labels map[string]string
}

func newEntry(obj *unstructured.Unstructured) *entry {
	rv, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	return &entry{data: treeData(obj), rv: rv, labels: obj.GetLabels()}
}

// Open opens (creating if needed) the store in dir. If the directory is held
// by another Store or process, the error wraps ErrLocked.
func Open(dir string, opts Options) (*Store, error) {
	opts.defaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: create data dir %s: %w", dir, err)
	}
	lock, err := pebble.LockDirectory(dir, vfs.Default)
	if err != nil {
		if isLockHeld(err) {
			return nil, &lockedError{dir: dir, cause: err}
		}
		return nil, fmt.Errorf("store: lock data dir %s: %w", dir, err)
	}
	popts := &pebble.Options{
		Lock:         lock,
		MemTableSize: opts.MemTableSize,
		Logger:       pebbleLogger{opts.Logger},
	}
	if opts.CacheSize > 0 {
		c := pebble.NewCache(opts.CacheSize)
		defer c.Unref() // the DB holds its own reference
		popts.Cache = c
	}
	db, err := pebble.Open(dir, popts)
	if err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("store: open pebble in %s: %w", dir, err)
	}
	s := &Store{
		dir: dir, opts: opts, db: db, lock: lock, log: opts.Logger,
		mutCh:    make(chan *mutation, maxGroup),
		closing:  make(chan struct{}),
		stopped:  make(chan struct{}),
		index:    map[string]map[nsName]*slot{},
		watchers: map[*watcher]struct{}{},
	}
	if err := s.load(); err != nil {
		_ = db.Close()
		_ = lock.Close()
		return nil, err
	}
	go s.writeLoop()
	return s, nil
}

func isLockHeld(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) ||
		strings.Contains(err.Error(), "lock held by current process")
}

// load reads meta keys and object projections into memory. The watch log is
// not replayed.
func (s *Store) load() error {
	ver, err := s.getRaw(keyVersion)
	if err != nil {
		return err
	}
	if ver == nil {
		if err := s.db.Set(keyVersion, []byte(layoutVersion), pebble.Sync); err != nil {
			return fmt.Errorf("store: write layout version: %w", err)
		}
	} else if slices.Contains(olderLayouts, string(ver)) {
		// This build reads the older layouts' records and log entries; what
		// it writes older builds cannot read, so they must refuse the store.
		if err := s.db.Set(keyVersion, []byte(layoutVersion), pebble.Sync); err != nil {
			return fmt.Errorf("store: write layout version: %w", err)
		}
		s.log.Info("store layout upgraded", "dir", s.dir, "from", string(ver), "to", layoutVersion)
	} else if string(ver) != layoutVersion {
		return fmt.Errorf("store: %s has key layout version %q, this build reads %q",
			s.dir, ver, append(slices.Clone(olderLayouts), layoutVersion))
	}
	var rv, compactFrom uint64 = 0, 1
	if b, err := s.getRaw(keyRV); err != nil {
		return err
	} else if b != nil {
		if rv, err = decodeUint64(b); err != nil {
			return fmt.Errorf("store: read m/rv: %w", err)
		}
	}
	if b, err := s.getRaw(keyCompact); err != nil {
		return err
	} else if b != nil {
		if compactFrom, err = decodeUint64(b); err != nil {
			return fmt.Errorf("store: read m/compact: %w", err)
		}
	}
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte(prefixObject), UpperBound: prefixEnd([]byte(prefixObject)),
	})
	if err != nil {
		return fmt.Errorf("store: iterate objects: %w", err)
	}
	defer it.Close()
	// Projections point at history entries. o/ and h/ keys sort by the same
	// address, so one history iterator only ever seeks forward.
	hit, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte(prefixHistory), UpperBound: prefixEnd([]byte(prefixHistory)),
	})
	if err != nil {
		return fmt.Errorf("store: iterate history: %w", err)
	}
	defer hit.Close()
	n := 0
	var hk []byte
	for it.First(); it.Valid(); it.Next() {
		res, ns, name, err := splitObjectKey(it.Key())
		if err != nil {
			return err
		}
		objJSON := it.Value()
		if len(objJSON) == 8 {
			seq := binary.BigEndian.Uint64(objJSON)
			hk = appendHistoryKey(hk[:0], res, ns, name, seq)
			if !hit.SeekGE(hk) || !bytes.Equal(hit.Key(), hk) {
				return fmt.Errorf("store: object %s/%s/%s: history entry %d is missing", res, ns, name, seq)
			}
			r, err := parseRecord(hit.Value())
			if err != nil {
				return fmt.Errorf("store: object %s/%s/%s: %w", res, ns, name, err)
			}
			objJSON = r.object
		} // else: an object JSON projection written by an earlier build
		obj, err := decodeObject(objJSON)
		if err != nil {
			return fmt.Errorf("store: object %s/%s/%s: %w", res, ns, name, err)
		}
		e := newEntry(obj)
		s.indexPut(res, nsName{ns, name}, &slot{cur: e, pub: e})
		n++
	}
	if err := errors.Join(it.Error(), hit.Error()); err != nil {
		return fmt.Errorf("store: load objects: %w", err)
	}
	s.w.seq = rv
	s.w.compactFrom = compactFrom
	s.compactFrom = compactFrom
	s.rv.Store(rv)
	s.log.Info("store opened", "dir", s.dir, "objects", n, "resourceVersion", rv, "compactFrom", compactFrom)
	return nil
}

func (s *Store) getRaw(k []byte) ([]byte, error) {
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: get %q: %w", k, err)
	}
	out := append([]byte{}, v...)
	_ = closer.Close()
	return out, nil
}

// indexPut adds a slot; writer goroutine (or Open), holding mu.
func (s *Store) indexPut(resource string, k nsName, sl *slot) {
	m := s.index[resource]
	if m == nil {
		m = map[nsName]*slot{}
		s.index[resource] = m
	}
	m[k] = sl
}

// slotOf returns the index slot of k (nil if there is none); writer
// goroutine only.
func (s *Store) slotOf(k objKey) *slot {
	return s.index[k.resource][nsName{k.ns, k.name}]
}

// current returns the writer's view of the slot's object (nil if absent);
// writer goroutine only.
func (sl *slot) current() *entry {
	if sl == nil {
		return nil
	}
	return sl.cur
}

// visible returns the durable version of an object (nil if absent);
// called with mu held.
func (s *Store) visible(resource, ns, name string) *entry {
	if sl := s.index[resource][nsName{ns, name}]; sl != nil {
		return sl.pub
	}
	return nil
}

// CurrentRV returns the resourceVersion of the last acknowledged event.
func (s *Store) CurrentRV() uint64 { return s.rv.Load() }

// Stats are cumulative counters of the write path.
type Stats struct {
	// Groups is the number of writer groups (one batch each) processed.
	Groups uint64
	// SyncedGroups is the number of groups that waited for a WAL fsync.
	SyncedGroups uint64
	// Mutations is the number of requests (object and side-table) handled.
	Mutations uint64
	// Events is the number of events appended.
	Events uint64
}

// Stats returns the write-path counters (for metrics and benchmarks).
func (s *Store) Stats() Stats {
	return Stats{
		Groups: s.stats.groups.Load(), SyncedGroups: s.stats.synced.Load(),
		Mutations: s.stats.mutations.Load(), Events: s.stats.events.Load(),
	}
}

// Dir returns the data directory.
func (s *Store) Dir() string { return s.dir }

// Close stops accepting writes, waits for in-flight writes to be acknowledged,
// ends all watches and closes pebble, releasing the directory lock.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	s.closeMu.Unlock()

	<-s.stopped
	s.mu.Lock()
	for w := range s.watchers {
		w.Stop()
	}
	s.mu.Unlock()
	s.watchWG.Wait()
	s.dbMu.Lock()
	s.dbClosed = true
	err := s.db.Close()
	s.dbMu.Unlock()
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	if err != nil {
		return fmt.Errorf("store: close %s: %w", s.dir, err)
	}
	return nil
}

// gr is the GroupResource used in errors for resource.
func gr(resource string) schema.GroupResource {
	return schema.GroupResource{Group: Group, Resource: resource}
}

// pebbleLogger routes pebble's messages to slog.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...interface{}) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLogger) Errorf(format string, args ...interface{}) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLogger) Fatalf(format string, args ...interface{}) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "component", "pebble")
	panic("pebble: " + msg)
}
