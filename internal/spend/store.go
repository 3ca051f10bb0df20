package spend

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
)

// indexMagic starts every index file; the trailing byte is the format version.
const indexMagic = "AICLISPENDIDX\x01"

// errBadIndex marks an index file that cannot be decoded; the caller starts from an empty index.
var errBadIndex = errors.New("spend: corrupt index file")

type encoder struct {
	w   *bufio.Writer
	buf []byte
}

func (e *encoder) uvarint(v uint64) {
	e.buf = binary.AppendUvarint(e.buf[:0], v)
	_, _ = e.w.Write(e.buf)
}
func (e *encoder) varint(v int64) { e.buf = binary.AppendVarint(e.buf[:0], v); _, _ = e.w.Write(e.buf) }
func (e *encoder) bytes(b []byte) { e.uvarint(uint64(len(b))); _, _ = e.w.Write(b) }
func (e *encoder) str(s string)   { e.uvarint(uint64(len(s))); _, _ = e.w.WriteString(s) }
func (e *encoder) bool(b bool) {
	if b {
		_ = e.w.WriteByte(1)
	} else {
		_ = e.w.WriteByte(0)
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

// save writes the index atomically: temp file, fsync, rename, fsync of the directory.
func (x *index) save(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("spend: create index dir: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".index-*.tmp")
	if err != nil {
		return fmt.Errorf("spend: create temp index: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	e := &encoder{w: bw}
	_, _ = bw.WriteString(indexMagic)
	e.uvarint(uint64(len(x.keys)))
	for _, k := range x.keys {
		e.varint(int64(k.Day))
		e.str(string(k.Harness))
		e.str(k.Model)
		e.str(k.Agent)
		e.bool(k.OverTier)
	}
	paths := make([]string, 0, len(x.files))
	for p := range x.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	e.uvarint(uint64(len(paths)))
	for _, p := range paths {
		f := x.files[p]
		e.str(f.Path)
		e.str(string(f.Harness))
		e.str(f.Agent)
		e.varint(f.Size)
		e.varint(f.MtimeNs)
		e.uvarint(f.Ino)
		e.varint(f.Offset)
		e.uvarint(f.TailHash)
		e.bytes(f.State)
		e.varint(f.Lines)
		e.varint(f.Unparseable)
		e.str(f.ReadError)
		e.uvarint(uint64(len(f.Rows)))
		for id, b := range f.Rows {
			e.uvarint(uint64(id))
			e.buckets(b)
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
	e.uvarint(uint64(len(x.groups)))
	for g, entries := range x.groups {
		_, _ = bw.Write(g[:])
		e.uvarint(uint64(len(entries)))
		for _, en := range entries {
			e.uvarint(en.Variant)
			e.bool(en.Side)
			e.uvarint(uint64(en.Key))
			e.buckets(en.Tokens)
		}
	}
	if err := bw.Flush(); err != nil {
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

// loadIndex reads an index file; a missing file yields an empty index, a corrupt one errBadIndex.
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
	d := &decoder{r: bufio.NewReaderSize(fh, 1<<20)}
	magic := make([]byte, len(indexMagic))
	if _, err := io.ReadFull(d.r, magic); err != nil || string(magic) != indexMagic {
		return nil, errBadIndex
	}
	nk := d.uvarint()
	for i := uint64(0); i < nk && d.err == nil; i++ {
		k := aggKey{Day: int32(d.varint()), Harness: Harness(d.str()), Model: d.str(), Agent: d.str(), OverTier: d.bool()}
		x.keyIDs[k] = uint32(len(x.keys))
		x.keys = append(x.keys, k)
	}
	nf := d.uvarint()
	for i := uint64(0); i < nf && d.err == nil; i++ {
		f := &fileEntry{Path: d.str(), Harness: Harness(d.str()), Agent: d.str(), Size: d.varint(), MtimeNs: d.varint(),
			Ino: d.uvarint(), Offset: d.varint(), TailHash: d.uvarint(), State: d.bytes(), Lines: d.varint(),
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
			if uint64(id) >= nk {
				return nil, errBadIndex
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
		x.files[f.Path] = f
	}
	ng := d.uvarint()
	for i := uint64(0); i < ng && d.err == nil; i++ {
		var g [16]byte
		if _, err := io.ReadFull(d.r, g[:]); err != nil {
			return nil, errBadIndex
		}
		ne := d.uvarint()
		if ne > 1<<20 {
			return nil, errBadIndex
		}
		entries := make([]groupEntry, 0, ne)
		for j := uint64(0); j < ne && d.err == nil; j++ {
			en := groupEntry{Variant: d.uvarint(), Side: d.bool(), Key: uint32(d.uvarint()), Tokens: d.buckets()}
			if uint64(en.Key) >= nk {
				return nil, errBadIndex
			}
			entries = append(entries, en)
		}
		x.groups[g] = entries
	}
	if d.err != nil {
		return nil, errBadIndex
	}
	x.recomputeTotals()
	return x, nil
}
