package spend

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
)

// The durable index is a snapshot file plus an append-only log of changes since the snapshot, so a call that read
// 1 MB of new lines persists a record proportional to what changed, not the whole index. Both files carry the
// snapshot's generation; a log of another generation is ignored. When the log outgrows half the snapshot, the next
// save writes a fresh snapshot (temp file, fsync, rename) and starts a new log.
const (
	snapshotMagic = "AICLISPENDIDX\x04"
	logMagic      = "AICLISPENDLOG\x04"
	minCompact    = 1 << 20
)

// errBadIndex marks an index snapshot that cannot be decoded; the caller starts from an empty index.
var errBadIndex = errors.New("spend: corrupt index file")

type encoder struct {
	w   *bytes.Buffer
	buf []byte
}

func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf[:0], v); e.w.Write(e.buf) }
func (e *encoder) varint(v int64)   { e.buf = binary.AppendVarint(e.buf[:0], v); e.w.Write(e.buf) }
func (e *encoder) bytes(b []byte)   { e.uvarint(uint64(len(b))); e.w.Write(b) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.w.WriteString(s) }
func (e *encoder) bool(b bool) {
	if b {
		e.w.WriteByte(1)
	} else {
		e.w.WriteByte(0)
	}
}
func (e *encoder) float(f float64) { e.uvarint(math.Float64bits(f)) }
func (e *encoder) buckets(b Buckets) {
	e.varint(b.UncachedInput)
	e.varint(b.CacheRead)
	e.varint(b.CacheWrite5m)
	e.varint(b.CacheWrite1h)
	e.varint(b.Output)
}

type decoder struct {
	r   *bufio.Reader
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d.r)
	d.err = err
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(d.r)
	d.err = err
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > 1<<30 {
		d.err = errBadIndex
		return nil
	}
	b := make([]byte, n)
	_, d.err = io.ReadFull(d.r, b)
	return b
}

func (d *decoder) str() string { return string(d.bytes()) }
func (d *decoder) bool() bool {
	if d.err != nil {
		return false
	}
	c, err := d.r.ReadByte()
	d.err = err
	return c == 1
}
func (d *decoder) float() float64 { return math.Float64frombits(d.uvarint()) }
func (d *decoder) buckets() Buckets {
	return Buckets{d.varint(), d.varint(), d.varint(), d.varint(), d.varint()}
}
func (d *decoder) hash() [16]byte {
	var g [16]byte
	if d.err == nil {
		_, d.err = io.ReadFull(d.r, g[:])
	}
	return g
}

func (e *encoder) key(k aggKey) {
	e.varint(int64(k.Day))
	e.str(string(k.Harness))
	e.str(k.Model)
	e.str(k.Agent)
	e.str(k.Session)
	e.bool(k.OverTier)
}

func (d *decoder) key() aggKey {
	return aggKey{Day: int32(d.varint()), Harness: Harness(d.str()), Model: d.str(), Agent: d.str(), Session: d.str(),
		OverTier: d.bool()}
}

func (e *encoder) file(f *fileEntry) {
	e.str(f.Path)
	e.str(string(f.Harness))
	e.str(f.Agent)
	e.varint(f.Size)
	e.varint(f.MtimeNs)
	e.uvarint(f.Ino)
	e.varint(f.Offset)
	e.bool(f.Skip)
	e.uvarint(f.TailHash)
	e.bytes(f.State)
	e.varint(f.Lines)
	e.varint(f.Unparseable)
	e.str(f.ReadError)
	ids := make([]uint32, 0, len(f.Rows))
	for id := range f.Rows {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	e.uvarint(uint64(len(ids)))
	for _, id := range ids {
		e.uvarint(uint64(id))
		e.buckets(f.Rows[id])
	}
	e.bool(f.Quota != nil)
	if q := f.Quota; q != nil {
		e.str(string(q.Harness))
		e.str(q.ObservedAt)
		e.varint(q.UnixMilli)
		for _, w := range []*QuotaWindow{q.Primary, q.Secondary} {
			e.bool(w != nil)
			if w != nil {
				e.float(w.UsedPercent)
				e.varint(w.WindowMinutes)
				e.str(w.ResetsAt)
			}
		}
	}
}

func (d *decoder) file(nkeys int) *fileEntry {
	f := &fileEntry{Path: d.str(), Harness: Harness(d.str()), Agent: d.str(), Size: d.varint(), MtimeNs: d.varint(),
		Ino: d.uvarint(), Offset: d.varint(), Skip: d.bool(), TailHash: d.uvarint(), State: d.bytes(), Lines: d.varint(),
		Unparseable: d.varint(), ReadError: d.str()}
	if len(f.State) == 0 {
		f.State = nil
	}
	nr := d.uvarint()
	for j := uint64(0); j < nr && d.err == nil; j++ {
		if f.Rows == nil {
			f.Rows = map[uint32]Buckets{}
		}
		id := uint32(d.uvarint())
		f.Rows[id] = d.buckets()
		if int(id) >= nkeys {
			d.err = errBadIndex
		}
	}
	if d.bool() {
		q := &Quota{Harness: Harness(d.str()), ObservedAt: d.str(), UnixMilli: d.varint()}
		for j := 0; j < 2; j++ {
			if d.bool() {
				w := &QuotaWindow{UsedPercent: d.float(), WindowMinutes: d.varint(), ResetsAt: d.str()}
				if j == 0 {
					q.Primary = w
				} else {
					q.Secondary = w
				}
			}
		}
		f.Quota = q
	}
	return f
}

func (e *encoder) group(g [16]byte, entries []groupEntry) {
	e.w.Write(g[:])
	e.uvarint(uint64(len(entries)))
	for _, en := range entries {
		e.uvarint(en.Variant)
		e.bool(en.Side)
		e.uvarint(uint64(en.Key))
		e.buckets(en.Tokens)
	}
}

func (d *decoder) group(nkeys int) ([16]byte, []groupEntry) {
	g := d.hash()
	ne := d.uvarint()
	if ne > 1<<20 {
		d.err = errBadIndex
		return g, nil
	}
	entries := make([]groupEntry, 0, ne)
	for j := uint64(0); j < ne && d.err == nil; j++ {
		en := groupEntry{Variant: d.uvarint(), Side: d.bool(), Key: uint32(d.uvarint()), Tokens: d.buckets()}
		if int(en.Key) >= nkeys {
			d.err = errBadIndex
		}
		entries = append(entries, en)
	}
	return g, entries
}

func logPath(path string) string { return path + ".log" }

// save persists the index: an appended log record when the log is small, otherwise a fresh snapshot.
func (x *index) save(path string) error {
	if x.gen != 0 && x.logSize+int64(x.dirtySize()) < max(x.snapSize/2, minCompact) {
		err := x.appendLog(path)
		if err == nil {
			return nil
		}
		// fall through: a fresh snapshot repairs a log we could not append to
	}
	return x.writeSnapshot(path)
}

// dirtySize estimates a log record's size.
func (x *index) dirtySize() int {
	return 256*len(x.dirtyFiles) + 96*len(x.dirtyGroups) + 64*(len(x.keys)-x.savedKeys)
}

func (x *index) clean() {
	x.dirtyFiles = map[string]bool{}
	x.dirtyGroups = map[[16]byte]bool{}
	x.savedKeys = len(x.keys)
}

func (x *index) writeSnapshot(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("spend: create index dir: %w", err)
	}
	var genb [8]byte
	if _, err := rand.Read(genb[:]); err != nil {
		return fmt.Errorf("spend: index generation: %w", err)
	}
	gen := binary.LittleEndian.Uint64(genb[:]) | 1
	var buf bytes.Buffer
	e := &encoder{w: &buf}
	buf.WriteString(snapshotMagic)
	buf.Write(genb[:])
	e.uvarint(uint64(len(x.keys)))
	for _, k := range x.keys {
		e.key(k)
	}
	paths := make([]string, 0, len(x.files))
	for p := range x.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	e.uvarint(uint64(len(paths)))
	for _, p := range paths {
		e.file(x.files[p])
	}
	e.uvarint(uint64(len(x.groups)))
	for g, entries := range x.groups {
		e.group(g, entries)
	}
	if err := writeAtomic(path, buf.Bytes()); err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(genb[:], gen)
	var hdr bytes.Buffer
	hdr.WriteString(logMagic)
	hdr.Write(genb[:])
	if err := writeAtomic(logPath(path), hdr.Bytes()); err != nil {
		return err
	}
	x.gen, x.snapSize, x.logSize = gen, int64(buf.Len()), int64(hdr.Len())
	x.clean()
	return nil
}

// appendLog writes one record of what changed since the last save and fsyncs it.
func (x *index) appendLog(path string) error {
	var payload bytes.Buffer
	e := &encoder{w: &payload}
	e.uvarint(uint64(x.savedKeys))
	e.uvarint(uint64(len(x.keys) - x.savedKeys))
	for _, k := range x.keys[x.savedKeys:] {
		e.key(k)
	}
	paths := make([]string, 0, len(x.dirtyFiles))
	for p := range x.dirtyFiles {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	e.uvarint(uint64(len(paths)))
	for _, p := range paths {
		f, ok := x.files[p]
		e.bool(ok)
		if ok {
			e.file(f)
		} else {
			e.str(p)
		}
	}
	e.uvarint(uint64(len(x.dirtyGroups)))
	for g := range x.dirtyGroups {
		e.group(g, x.groups[g])
	}
	var rec []byte
	rec = binary.AppendUvarint(rec, uint64(payload.Len()))
	rec = append(rec, payload.Bytes()...)
	rec = binary.LittleEndian.AppendUint32(rec, crc32.ChecksumIEEE(payload.Bytes()))
	fh, err := os.OpenFile(logPath(path), os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("spend: open index log: %w", err)
	}
	if _, err := fh.WriteAt(rec, x.logSize); err != nil {
		_ = fh.Close()
		return fmt.Errorf("spend: append index log: %w", err)
	}
	if err := fh.Sync(); err != nil {
		_ = fh.Close()
		return fmt.Errorf("spend: sync index log: %w", err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("spend: close index log: %w", err)
	}
	x.logSize += int64(len(rec))
	x.clean()
	return nil
}

// writeAtomic writes data to path through a synced temp file, a rename and a directory sync.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".index-*.tmp")
	if err != nil {
		return fmt.Errorf("spend: create temp index: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("spend: write index: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("spend: sync index: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("spend: close index: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("spend: replace index: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// loadIndex reads the snapshot and replays its log; a missing snapshot yields an empty index, a corrupt one
// errBadIndex. A torn or corrupt log tail is ignored: the index is then as of an earlier call, which the next scan
// brings up to date.
func loadIndex(path string) (*index, error) {
	x := newIndex()
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return x, nil
	}
	if err != nil {
		return nil, fmt.Errorf("spend: open index: %w", err)
	}
	defer func() { _ = fh.Close() }()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("spend: stat index: %w", err)
	}
	d := &decoder{r: bufio.NewReaderSize(fh, 1<<20)}
	head := make([]byte, len(snapshotMagic)+8)
	if _, err := io.ReadFull(d.r, head); err != nil || string(head[:len(snapshotMagic)]) != snapshotMagic {
		return nil, errBadIndex
	}
	gen := binary.LittleEndian.Uint64(head[len(snapshotMagic):]) | 1
	nk := int(d.uvarint())
	for i := 0; i < nk && d.err == nil; i++ {
		k := d.key()
		x.keyIDs[k] = uint32(len(x.keys))
		x.keys = append(x.keys, k)
	}
	nf := d.uvarint()
	for i := uint64(0); i < nf && d.err == nil; i++ {
		f := d.file(nk)
		x.files[f.Path] = f
	}
	ng := d.uvarint()
	for i := uint64(0); i < ng && d.err == nil; i++ {
		g, entries := d.group(nk)
		x.groups[g] = entries
	}
	if d.err != nil {
		return nil, errBadIndex
	}
	x.gen, x.snapSize = gen, fi.Size()
	x.replayLog(path)
	x.recomputeTotals()
	x.clean()
	return x, nil
}

func (x *index) replayLog(path string) {
	b, err := os.ReadFile(logPath(path))
	if err != nil || len(b) < len(logMagic)+8 || string(b[:len(logMagic)]) != logMagic ||
		binary.LittleEndian.Uint64(b[len(logMagic):])|1 != x.gen {
		x.gen = 0 // no usable log: the next save writes a snapshot and a new log
		return
	}
	off := len(logMagic) + 8
	for off < len(b) {
		n, k := binary.Uvarint(b[off:])
		if k <= 0 || uint64(len(b)-off-k) < n+4 {
			break
		}
		payload := b[off+k : off+k+int(n)]
		if binary.LittleEndian.Uint32(b[off+k+int(n):]) != crc32.ChecksumIEEE(payload) || !x.applyRecord(payload) {
			break
		}
		off += k + int(n) + 4
	}
	x.logSize = int64(off)
	if off < len(b) {
		x.gen = 0 // a torn tail: rewrite a snapshot on the next save rather than append after garbage
	}
}

// applyRecord replays one log record; it reports false (and changes nothing observable) when the record does not
// fit the index.
func (x *index) applyRecord(payload []byte) bool {
	d := &decoder{r: bufio.NewReader(bytes.NewReader(payload))}
	start := int(d.uvarint())
	nk := int(d.uvarint())
	if d.err != nil || start != len(x.keys) {
		return false
	}
	keys := make([]aggKey, 0, nk)
	for i := 0; i < nk && d.err == nil; i++ {
		keys = append(keys, d.key())
	}
	total := start + nk
	type fileChange struct {
		path string
		f    *fileEntry
	}
	var files []fileChange
	nf := d.uvarint()
	for i := uint64(0); i < nf && d.err == nil; i++ {
		if d.bool() {
			f := d.file(total)
			files = append(files, fileChange{f.Path, f})
		} else {
			files = append(files, fileChange{path: d.str()})
		}
	}
	type groupChange struct {
		g       [16]byte
		entries []groupEntry
	}
	var groups []groupChange
	ng := d.uvarint()
	for i := uint64(0); i < ng && d.err == nil; i++ {
		g, entries := d.group(total)
		groups = append(groups, groupChange{g, entries})
	}
	if d.err != nil {
		return false
	}
	for _, k := range keys {
		x.keyIDs[k] = uint32(len(x.keys))
		x.keys = append(x.keys, k)
	}
	for _, c := range files {
		if c.f == nil {
			delete(x.files, c.path)
		} else {
			x.files[c.path] = c.f
		}
	}
	for _, c := range groups {
		if len(c.entries) == 0 {
			delete(x.groups, c.g)
		} else {
			x.groups[c.g] = c.entries
		}
	}
	return true
}
