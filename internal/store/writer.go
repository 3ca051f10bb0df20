package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

type opKind int

const (
	opCreate opKind = iota
	opUpdate
	opUpdateStatus
	opDelete
	opPutKV
	opGetKV
	opTakeKV
	opDeleteKV
	opCompact
)

// mutation is one request to the writer. The writer fills out/outVal/err and
// the publisher signals done once the request's group is durable.
// kvPair is a side-table key (kvKey) and its value.
type kvPair struct{ key, val []byte }

type mutation struct {
	op       opKind
	resource string
	ns, name string
	obj      *unstructured.Unstructured // normalized private copy
	uid, rv  string                     // preconditions ("" = none)
	key      []byte                     // side-table key
	val      []byte
	more     []kvPair // PutKVs: further side-table values, in the same batch
	keepFrom uint64
	// Create only: the object's JSON up to the commit-time metadata, and
	// its labels.
	pre    []byte
	labels map[string]string

	out        *unstructured.Unstructured // shared, read-only
	outSeq     uint64                     // Create: the new object's resourceVersion
	outCreated string                     // Create: its creationTimestamp
	outVal     []byte
	err        error
	done       chan struct{} // capacity 1: one signal per submit
	acked      bool          // submit received the signal: the writer is done with m
}

// writerState is the writer goroutine's view: the published state plus every
// group applied to pebble but not yet published.
type writerState struct {
	// dead are slots emptied in the writer view, removed from the index by
	// sweep once that is published too.
	dead        []deadSlot
	seq         uint64
	compactFrom uint64
	groups      uint64 // groups formed so far (group.idx)
	// keyBuf, okBuf and logBuf are reused encode buffers.
	keyBuf, okBuf, logBuf []byte
	// batch builds the current group's pebble batch.
	batch groupBatch
}

type change struct {
	sl *slot
	e  *entry // nil: removed
}

type undoRec struct {
	dead deadSlot // the slot, with its address
	prev *entry
}

type deadSlot struct {
	resource string
	k        nsName
	sl       *slot
}

type kvOverlay struct {
	val     []byte
	deleted bool
}

// group is the unit of one pebble batch and one fsync wait.
type group struct {
	idx      uint64 // position in write order
	muts     []*mutation
	batch    *pebble.Batch // nil when the group wrote nothing
	events   []*event
	changes  []change
	undo     []undoRec
	kv       map[string]kvOverlay
	startSeq uint64
	lastSeq  uint64
	// now is the group's commit time (one Clock reading: the group is one
	// atomic batch); created is its RFC 3339 form once needed.
	now     time.Time
	created string
	// startCompactFrom is the writer's floor before the group.
	startCompactFrom uint64
	compactFrom      uint64 // raised floor, 0 if unchanged
}

// createdStamp returns the group's commit time as a creationTimestamp.
func (g *group) createdStamp() string {
	if g.created == "" {
		g.created = g.now.Format(time.RFC3339)
	}
	return g.created
}

// submit hands m to the writer and waits for its acknowledgement. A write
// whose context ends while waiting may still be committed.
func (s *Store) submit(ctx context.Context, m *mutation) error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if m.done == nil {
		m.done = make(chan struct{}, 1)
	}
	select {
	case s.mutCh <- m:
	case <-s.closing:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("store: %w", ctx.Err())
	}
	select {
	case <-m.done:
		m.acked = true
		return m.err
	case <-s.stopped:
		select {
		case <-m.done:
			m.acked = true
			return m.err
		default:
			return ErrClosed
		}
	case <-ctx.Done():
		return fmt.Errorf("store: waiting for commit: %w", ctx.Err())
	}
}

func (s *Store) writeLoop() {
	defer func() {
		s.awaitWG.Wait()
		close(s.stopped)
	}()
	for {
		var first *mutation
		select {
		case first = <-s.mutCh:
		case <-s.closing:
			return
		}
		g := &group{muts: []*mutation{first}}
		// Let submitters that are already runnable enqueue too, so one
		// batch and one pebble commit serve more of them.
		runtime.Gosched()
	drain:
		for len(g.muts) < maxGroup {
			select {
			case m := <-s.mutCh:
				g.muts = append(g.muts, m)
			default:
				break drain
			}
		}
		n := len(g.muts)
		g.events, g.changes, g.undo = make([]*event, 0, n), make([]change, 0, n), make([]undoRec, 0, n)
		s.w.groups++
		g.idx = s.w.groups
		s.appliedGroups.Store(g.idx)
		s.applyGroup(g)
		s.enqueue(g)
	}
}

// enqueue hands an applied group to the ordered publication. A group with a
// batch gets a goroutine that waits for its WAL sync; a group without one is
// published as soon as everything before it is.
func (s *Store) enqueue(g *group) {
	s.pubMu.Lock()
	s.pending = append(s.pending, g)
	if g.batch == nil {
		s.publishReady()
		s.pubMu.Unlock()
		return
	}
	s.pubMu.Unlock()
	s.awaitWG.Add(1)
	go s.awaitSync(g)
}

// awaitSync waits for g's fsync. WAL syncs complete in write order, so a
// synced group implies every earlier group is synced: whichever waiter wakes
// first publishes the whole ready prefix.
func (s *Store) awaitSync(g *group) {
	defer s.awaitWG.Done()
	err := g.batch.SyncWait()
	_ = g.batch.Close()
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	if err != nil {
		ferr := fmt.Errorf("store: sync failed, store is unusable: %w", err)
		s.failed.CompareAndSwap(nil, &ferr)
		s.log.Error("store sync failed", "err", err)
		for len(s.pending) > 0 && s.pending[0].idx <= g.idx {
			h := s.pending[0]
			s.pending = s.pending[1:]
			for _, m := range h.muts {
				if m.err == nil {
					m.err, m.out, m.outVal = ferr, nil, nil
				}
				m.done <- struct{}{}
			}
			s.markPublished(h.idx)
		}
		return
	}
	s.syncedThrough = max(s.syncedThrough, g.idx)
	s.publishReady()
}

// publishReady publishes the pending prefix that is durable. Called with
// pubMu held.
func (s *Store) publishReady() {
	for len(s.pending) > 0 {
		h := s.pending[0]
		if h.batch != nil && h.idx > s.syncedThrough {
			return
		}
		s.pending[0] = nil
		s.pending = s.pending[1:]
		s.publish(h)
	}
}

func (s *Store) applyGroup(g *group) {
	if p := s.failed.Load(); p != nil {
		for _, m := range g.muts {
			m.err = *p
		}
		return
	}
	s.sweep()
	g.now = s.opts.Clock().UTC()
	gb := &s.w.batch
	gb.reset(s.db.NewBatch())
	g.startSeq = s.w.seq
	g.startCompactFrom = s.w.compactFrom
	for _, m := range g.muts {
		m.err = s.applyOne(g, gb, m)
		if m.err != nil {
			m.out, m.outVal = nil, nil
		}
	}
	if len(g.events) > 0 {
		s.w.logBuf = appendLogGroup(s.w.logBuf[:0], g.events)
		gb.set(eventKey(g.events[0].seq), s.w.logBuf)
	}
	if g.lastSeq > 0 {
		gb.set(keyRV, encodeUint64(g.lastSeq))
		if retain := s.opts.CompactRetain; retain > 0 {
			slack := uint64(max(retain/16, 1))
			if s.w.seq-s.w.compactFrom+1 > uint64(retain)+slack {
				if err := s.compactTo(g, gb, s.w.seq-uint64(retain)+1); err != nil {
					s.abortGroup(g, gb.pb, err)
					return
				}
			}
		}
	}
	if gb.empty() {
		_ = gb.pb.Close()
		return
	}
	b, err := gb.commit()
	if err == nil {
		err = s.db.ApplyNoSyncWait(b, pebble.Sync)
	}
	if err != nil {
		s.abortGroup(g, b, err)
		return
	}
	g.batch = b
}

// sweep removes index slots that are empty in the writer view and whose
// removal is published (so readers already miss them).
func (s *Store) sweep() {
	if len(s.w.dead) == 0 {
		return
	}
	keep := s.w.dead[:0]
	s.mu.Lock()
	for _, d := range s.w.dead {
		switch {
		case d.sl.cur != nil: // created again
		case d.sl.pub != nil: // removal not yet published
			keep = append(keep, d)
		default:
			if m := s.index[d.resource]; m[d.k] == d.sl {
				delete(m, d.k)
			}
		}
	}
	s.mu.Unlock()
	clear(s.w.dead[len(keep):])
	s.w.dead = keep
}

// abortGroup undoes the writer view changes of a group that could not be
// applied and fails every mutation in it.
func (s *Store) abortGroup(g *group, b *pebble.Batch, cause error) {
	_ = b.Close()
	for i := len(g.undo) - 1; i >= 0; i-- {
		u := g.undo[i]
		u.dead.sl.cur = u.prev
		if u.prev == nil {
			s.w.dead = append(s.w.dead, u.dead)
		}
	}
	s.w.seq = g.startSeq
	if g.compactFrom != 0 {
		// The published floor stays raised: watches from the range that was
		// about to be trimmed get 410 and re-list, which is safe.
		s.w.compactFrom = g.startCompactFrom
	}
	err := fmt.Errorf("store: apply batch: %w", cause)
	for _, m := range g.muts {
		if m.err == nil {
			m.err, m.out, m.outVal = err, nil, nil
		}
	}
	g.events, g.changes, g.undo, g.lastSeq = nil, nil, nil, 0
	s.log.Error("store batch failed", "err", cause)
}

func (s *Store) applyOne(g *group, gb *groupBatch, m *mutation) error {
	switch m.op {
	case opCreate:
		return s.applyCreate(g, gb, m)
	case opUpdate:
		return s.applyUpdate(g, gb, m)
	case opUpdateStatus:
		return s.applyUpdateStatus(g, gb, m)
	case opDelete:
		return s.applyDelete(g, gb, m)
	case opPutKV, opGetKV, opTakeKV, opDeleteKV:
		return s.applyKV(g, gb, m)
	case opCompact:
		return s.compactTo(g, gb, m.keepFrom)
	default:
		return fmt.Errorf("store: unknown operation %d", m.op)
	}
}

// nextSeq allocates the next event sequence number.
func (s *Store) nextSeq(g *group) uint64 {
	s.w.seq++
	g.lastSeq = s.w.seq
	return s.w.seq
}

// version is what one event allocates: the object version, the event and,
// unless the event removes the object, its index entry.
type version struct {
	data  objData
	ev    event
	entry entry
}

// emit writes one event: log entry, history entry and projection, and
// updates the writer view. The object (its JSON raw or its tree, and its
// labels) must already carry resourceVersion = seq. sl is k's slot, nil if
// it has none yet.
func (s *Store) emit(g *group, gb *groupBatch, k objKey, sl *slot, seq uint64, typ string, now time.Time,
	raw []byte, tree *unstructured.Unstructured, labels map[string]string, prev *entry, remove bool) error {
	// One allocation holds the object version, its event and its entry.
	v := &version{}
	d := &v.data
	d.raw = raw
	if tree != nil {
		d.tree.Store(tree)
	}
	ev := &v.ev
	*ev = event{seq: seq, typ: typ, resource: k.resource, ns: k.ns, name: k.name, time: now, data: d, labels: labels}
	if prev != nil {
		if !labelsEqual(prev.labels, labels) {
			ev.labelsChanged = true
			ev.prevLabels = prev.labels
			if ev.prevLabels == nil {
				ev.prevLabels = map[string]string{}
			}
		}
	}
	// The object is encoded once, straight into the batch buffer as the
	// history record. The projection points at the object's latest history
	// entry, which holds the record: the object is written once per event,
	// and Open reads one entry per object. The group's watch-log entry
	// (applyGroup) points at the history entries too; history is never
	// trimmed, so the pointers stay valid.
	s.w.keyBuf = appendHistoryKey(s.w.keyBuf[:0], k.resource, k.ns, k.name, seq)
	if err := gb.setEncoded(s.w.keyBuf, func(b []byte) ([]byte, error) { return encodeRecord(b, ev) }); err != nil {
		return fmt.Errorf("store: encode %s/%s: %w", k.ns, k.name, err)
	}
	s.w.okBuf = appendObjectKey(s.w.okBuf[:0], k.resource, k.ns, k.name)
	if remove {
		gb.delete(s.w.okBuf)
	} else {
		var ptr [8]byte
		binary.BigEndian.PutUint64(ptr[:], seq)
		gb.set(s.w.okBuf, ptr[:])
	}
	a := nsName{k.ns, k.name}
	if sl == nil {
		sl = &slot{}
		s.mu.Lock()
		s.indexPut(k.resource, a, sl)
		s.mu.Unlock()
	}
	ds := deadSlot{k.resource, a, sl}
	var e *entry
	if !remove {
		e = &v.entry
		*e = entry{data: d, rv: seq, labels: labels}
	} else {
		s.w.dead = append(s.w.dead, ds)
	}
	sl.cur = e
	g.undo = append(g.undo, undoRec{dead: ds, prev: prev})
	g.changes = append(g.changes, change{sl: sl, e: e})
	g.events = append(g.events, ev)
	return nil
}

func labelsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// compactTo trims the watch log below keepFrom (clamped to the next seq).
func (s *Store) compactTo(g *group, gb *groupBatch, keepFrom uint64) error {
	if keepFrom > s.w.seq+1 {
		keepFrom = s.w.seq + 1
	}
	if keepFrom <= s.w.compactFrom {
		return nil
	}
	// Log entries hold whole groups: the one holding keepFrom stays (replay
	// skips its events below the floor).
	end := eventKey(keepFrom)
	if keepFrom <= s.w.seq {
		if len(g.events) > 0 && g.events[0].seq <= keepFrom {
			end = eventKey(g.events[0].seq) // this group's entry: kept, the range ends before it
		} else {
			held, err := s.logEntryHolding(keepFrom)
			if err != nil {
				return err
			}
			end = held
		}
	}
	if start := eventKey(s.w.compactFrom); bytes.Compare(start, end) < 0 { // else the entry holding both floors stays
		if err := gb.deleteRange(start, end); err != nil {
			return fmt.Errorf("store: build compaction: %w", err)
		}
	}
	gb.set(keyCompact, encodeUint64(keepFrom))
	s.w.compactFrom = keepFrom
	g.compactFrom = keepFrom
	// Raise the published floor before the range deletion becomes visible,
	// so a watch registering now cannot replay from a trimmed log.
	s.mu.Lock()
	s.compactFrom = keepFrom
	s.mu.Unlock()
	return nil
}

// publish makes a durable group visible (index, watchers) and acknowledges
// its callers. Called with pubMu held, in group order.
func (s *Store) publish(g *group) {
	s.stats.groups.Add(1)
	s.stats.mutations.Add(uint64(len(g.muts)))
	s.stats.events.Add(uint64(len(g.events)))
	if g.batch != nil {
		s.stats.synced.Add(1)
	}
	if len(g.changes) > 0 || len(g.events) > 0 {
		s.mu.Lock()
		for _, c := range g.changes {
			c.sl.pub = c.e
		}
		if g.lastSeq > s.rv.Load() {
			s.rv.Store(g.lastSeq)
		}
		s.fanout(g.events)
		s.remember(g.events)
		s.mu.Unlock()
	}
	for _, m := range g.muts {
		m.done <- struct{}{}
	}
	s.markPublished(g.idx)
}

// markPublished records that group idx is acknowledged and wakes durable
// readers. Called with pubMu held.
func (s *Store) markPublished(idx uint64) {
	s.published = idx
	if s.pubNotify != nil {
		close(s.pubNotify)
		s.pubNotify = nil
	}
}

// waitDurable waits until every group up to target is acknowledged (synced),
// so a direct pebble read that began before target was loaded returned only
// durable data.
func (s *Store) waitDurable(ctx context.Context, target uint64) error {
	for {
		s.pubMu.Lock()
		if s.published >= target {
			s.pubMu.Unlock()
			return nil
		}
		if p := s.failed.Load(); p != nil {
			s.pubMu.Unlock()
			return *p
		}
		if s.pubNotify == nil {
			s.pubNotify = make(chan struct{})
		}
		ch := s.pubNotify
		s.pubMu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("store: waiting for durability: %w", ctx.Err())
		}
	}
}
