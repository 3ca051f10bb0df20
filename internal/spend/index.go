package spend

import (
	"hash/fnv"
)

// aggKey is one aggregation cell: a UTC day, a model of a harness, an agent, a CLI session, and the side of the
// tier threshold.
type aggKey struct {
	Day      int32
	Harness  Harness
	Model    string
	Agent    string
	Session  string
	OverTier bool
}

// fileEntry is the index's record of one session file.
type fileEntry struct {
	Path    string
	Harness Harness
	Agent   string
	Size    int64
	MtimeNs int64
	Ino     uint64
	// Offset is the byte offset after the last complete line consumed; bytes past it (a partial line) are
	// re-read on the next call.
	Offset int64
	// Skip says Offset is inside a line longer than MaxLineBytes (already counted as unparseable): the next read
	// skips to its newline.
	Skip bool
	// TailHash fingerprints the up-to-64 bytes before Offset, to detect a file replaced by other content.
	TailHash uint64
	// State is the parser's resume state at Offset.
	State []byte
	// Lines counts parseable lines consumed so far; Unparseable counts the rest.
	Lines       int64
	Unparseable int64
	// ReadError is the last error reading the file ("" when fine).
	ReadError string
	// Rows are the file's undeduplicated contributions.
	Rows map[uint32]Buckets
	// Quota is the newest live quota seen in the file.
	Quota *Quota

	seen bool
	// pending says the last call left some of the file unread (Options.ScanBudget); not persisted, every call
	// sets it again.
	pending bool
}

// unparseable reports whether the file as a whole counts as unparseable.
func (f *fileEntry) unparseable() bool {
	return f.ReadError != "" || (f.Unparseable > 0 && f.Lines == 0)
}

// groupEntry is the best copy of one request variant within a dedup group.
type groupEntry struct {
	Variant uint64
	Side    bool
	Key     uint32
	Tokens  Buckets
}

// index is the in-memory form of the durable spend index.
type index struct {
	files  map[string]*fileEntry
	keys   []aggKey
	keyIDs map[aggKey]uint32
	groups map[[16]byte][]groupEntry
	// totals is derived: the sum of all file rows and all group contributions.
	totals []Buckets
	// stale is set when a contribution was taken off a saturated total (whose exact value is unknown): the totals
	// must be recomputed from rows and groups before they are read.
	stale bool

	// Persistence bookkeeping: what changed since the last save, and the snapshot/log the next save extends.
	dirtyFiles  map[string]bool
	dirtyGroups map[[16]byte]bool
	savedKeys   int
	gen         uint64
	snapSize    int64
	logSize     int64
}

func newIndex() *index {
	return &index{files: map[string]*fileEntry{}, keyIDs: map[aggKey]uint32{}, groups: map[[16]byte][]groupEntry{},
		dirtyFiles: map[string]bool{}, dirtyGroups: map[[16]byte]bool{}}
}

// touch marks a file's record as changed since the last save.
func (x *index) touch(path string) { x.dirtyFiles[path] = true }

// dirty reports whether anything changed since the last save.
func (x *index) dirty() bool {
	return len(x.dirtyFiles) > 0 || len(x.dirtyGroups) > 0 || x.savedKeys != len(x.keys)
}

func (x *index) keyID(k aggKey) uint32 {
	if id, ok := x.keyIDs[k]; ok {
		return id
	}
	id := uint32(len(x.keys))
	x.keys = append(x.keys, k)
	x.keyIDs[k] = id
	x.totals = append(x.totals, Buckets{})
	return id
}

func (x *index) addTotal(id uint32, b Buckets) { x.totals[id] = x.totals[id].Add(b) }

// subTotal takes a contribution off a total. Contributions are never negative, so a total below MaxTokens is exact
// and so is the difference; a saturated one is not, and the totals are recomputed instead (see freshTotals).
func (x *index) subTotal(id uint32, b Buckets) {
	if x.totals[id].Saturated() {
		x.stale = true
		return
	}
	x.totals[id] = x.totals[id].Sub(b)
}

// freshTotals recomputes the totals when a subtraction from a saturated one made them stale.
func (x *index) freshTotals() {
	if x.stale {
		x.recomputeTotals()
	}
}

// groupContribution calls fn for each entry of a dedup group that counts: the non-sidechain entries when there
// are any, otherwise the sidechain ones.
func groupContribution(entries []groupEntry, fn func(groupEntry)) {
	main := false
	for _, e := range entries {
		if !e.Side {
			main = true
			break
		}
	}
	for _, e := range entries {
		if e.Side != main {
			fn(e)
		}
	}
}

func hash128(s string) [16]byte {
	h := fnv.New128a()
	_, _ = h.Write([]byte(s))
	var out [16]byte
	h.Sum(out[:0])
	return out
}

func hash64(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
}

// apply adds one event of file f to the index.
func (x *index) apply(f *fileEntry, ev Event) {
	key := aggKey{Day: ev.Day(), Harness: f.Harness, Model: ev.Model, Agent: f.Agent, Session: SessionOf(f.Path),
		OverTier: ev.Tokens.Prompt() > TierThreshold}
	id := x.keyID(key)
	if ev.Dedup == "" {
		if f.Rows == nil {
			f.Rows = map[uint32]Buckets{}
		}
		f.Rows[id] = f.Rows[id].Add(ev.Tokens)
		x.addTotal(id, ev.Tokens)
		return
	}
	g := hash128(string(f.Harness) + "\x00" + ev.Dedup)
	variant := hash64(ev.DedupVariant)
	entries := x.groups[g]
	pos := -1
	for i, e := range entries {
		if e.Variant == variant && e.Side == ev.Sidechain {
			pos = i
			break
		}
	}
	if pos >= 0 {
		cur, next := entries[pos].Tokens.Total(), ev.Tokens.Total()
		if cur > next || cur == next && x.keys[entries[pos].Key].Session <= key.Session {
			// A larger copy is already counted; of equal copies (a resumed session's), the one of the first
			// session in id order, so that per-session costs do not depend on the order files are read in.
			return
		}
	}
	groupContribution(entries, func(e groupEntry) { x.subTotal(e.Key, e.Tokens) })
	ne := groupEntry{Variant: variant, Side: ev.Sidechain, Key: id, Tokens: ev.Tokens}
	if pos >= 0 {
		entries[pos] = ne
	} else {
		entries = append(entries, ne)
	}
	x.groups[g] = entries
	x.dirtyGroups[g] = true
	groupContribution(entries, func(e groupEntry) { x.addTotal(e.Key, e.Tokens) })
}

// dropFile removes a file's undeduplicated rows from the totals and forgets the file.
func (x *index) dropFile(f *fileEntry) {
	for id, b := range f.Rows {
		x.subTotal(id, b)
	}
	delete(x.files, f.Path)
	x.touch(f.Path)
}

// resetHarnessDedup forgets every dedup group of a harness's files and every such file's progress, so the next
// scan rebuilds them from the start (used when a file of a deduplicating harness shrinks, is replaced or vanishes:
// a removed copy may have hidden another).
func (x *index) resetHarness(h Harness) {
	for _, f := range x.files {
		if f.Harness == h {
			x.resetFile(f)
		}
	}
	for g, entries := range x.groups {
		if len(entries) > 0 && x.keys[entries[0].Key].Harness == h {
			groupContribution(entries, func(e groupEntry) { x.subTotal(e.Key, e.Tokens) })
			delete(x.groups, g)
			x.dirtyGroups[g] = true
		}
	}
}

// resetFile rewinds one file to be read again from the start.
func (x *index) resetFile(f *fileEntry) {
	for id, b := range f.Rows {
		x.subTotal(id, b)
	}
	f.Rows = nil
	x.touch(f.Path)
	f.Offset, f.Skip, f.TailHash, f.State, f.Lines, f.Unparseable, f.ReadError, f.Quota = 0, false, 0, nil, 0, 0, "", nil
	f.Size, f.MtimeNs, f.Ino = -1, 0, 0
}

// recomputeTotals rebuilds the derived totals from rows and groups.
func (x *index) recomputeTotals() {
	x.totals = make([]Buckets, len(x.keys))
	x.stale = false
	for _, f := range x.files {
		for id, b := range f.Rows {
			x.addTotal(id, b)
		}
	}
	for _, entries := range x.groups {
		groupContribution(entries, func(e groupEntry) { x.addTotal(e.Key, e.Tokens) })
	}
}
