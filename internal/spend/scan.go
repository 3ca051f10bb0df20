package spend

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"syscall"
)

// The scanner's bounds. A session file is written by the CLI, and in an agent's home by a CLI the supervisor does
// not trust, so neither a line nor a file may cost the reader what its writer chooses: `truncate -s 100G` makes a
// file of one endless line that costs its writer no disk.
const (
	// MaxLineBytes is the longest line parsed. A longer line is counted as unparseable and skipped up to its
	// newline without being held, so reading any file costs at most about this much buffer.
	MaxLineBytes = 16 << 20
	// DefaultScanBudget is Options.ScanBudget's default: the bytes one call reads at most from the files of one
	// home-confined scope (one agent, one harness).
	DefaultScanBudget = 1 << 30
	// flushEvents is how many events a scan hands over at once, so a file's events are applied as it is read.
	flushEvents = 1 << 14
	initialBuf  = 1 << 20
)

// fileStat is what the index compares to decide whether a file changed.
type fileStat struct {
	Size    int64
	MtimeNs int64
	Ino     uint64
}

// tailHash fingerprints the up-to-64 bytes before off.
func tailHash(fh *os.File, off int64) (uint64, error) {
	if off == 0 {
		return 0, nil
	}
	start := max(off-64, 0)
	buf := make([]byte, off-start)
	if _, err := fh.ReadAt(buf, start); err != nil {
		return 0, fmt.Errorf("spend: read tail: %w", err)
	}
	h := fnv.New64a()
	_, _ = h.Write(buf)
	return h.Sum64() | 1, nil // never 0, so 0 means "nothing consumed"
}

// scanJob is one file to read from offset up to stat.Size, or up to limit bytes of it.
type scanJob struct {
	entry  *fileEntry
	parser SessionParser
	files  *access
	stat   fileStat
	offset int64
	// skip says offset is inside a line longer than MaxLineBytes, to be skipped up to its newline.
	skip  bool
	state []byte
	// budget names the scope whose ScanBudget the job draws on ("" for an unconfined scope: no budget).
	budget string
	// limit is how many bytes to read at most (-1: up to stat.Size).
	limit int64
}

func (j *scanJob) remaining() int64 { return max(j.stat.Size-j.offset, 0) }

// seekData is lseek's SEEK_DATA (Linux and most Unixes): the next offset at or after the given one that holds data.
const seekData = 3

// skipHole returns the end of the hole at pos (at most size), or pos when there is none or the file system cannot
// tell. Only a line being skipped is sought through: a hole reads as zeros, which hold no newline, so a sparse file
// (`truncate -s 8E`) costs one system call to skip, not the reading of its length.
func skipHole(fh *os.File, pos, size int64) int64 {
	d, err := fh.Seek(pos, seekData)
	switch {
	case err == nil:
		return min(max(d, pos), size)
	case errors.Is(err, syscall.ENXIO): // no data after pos: a hole up to the end
		return max(pos, size)
	default:
		return pos
	}
}

// scanResult is what reading one file produced. A partial result carries only events, handed over while the file
// is still being read; the last result of a job is not partial.
type scanResult struct {
	job         *scanJob
	partial     bool
	events      []Event
	lines       int64
	unparseable int64
	offset      int64
	skip        bool
	// more says the job stopped at its limit before the end of the file.
	more  bool
	tail  uint64
	state []byte
	quota *Quota
	err   error
}

// scan reads the new complete lines of one file, handing events to flush as they accumulate. buf is the worker's
// buffer, returned grown (to at most MaxLineBytes+1) when a line needed it.
func (j *scanJob) scan(buf []byte, flush func([]Event)) (res scanResult, outBuf []byte) {
	res = scanResult{job: j, offset: j.offset, skip: j.skip, state: j.state}
	fp, err := j.parser.NewFile(j.entry.Path, j.state)
	if err != nil {
		res.err = err
		return res, buf
	}
	fh, st, err := j.files.openRegular(j.entry.Path)
	if err != nil {
		res.err = err
		return res, buf
	}
	defer func() { _ = fh.Close() }()
	if st.Ino != j.stat.Ino && st.Ino != 0 && j.stat.Ino != 0 {
		res.err = fmt.Errorf("spend: %s was replaced while being read", j.entry.Path)
		return res, buf
	}
	left := j.remaining() // bytes this scan may read: holes skipped are not read
	if j.limit >= 0 {
		left = min(left, j.limit)
	}
	emit := func(ev Event) {
		res.events = append(res.events, ev)
		if len(res.events) == flushEvents {
			flush(res.events)
			res.events = nil
		}
	}
	pos, off, skip := j.offset, j.offset, j.skip // pos: the next byte to read; off: the file offset of buf[0]
	filled := 0
	for {
		if filled == len(buf) {
			if len(buf) > MaxLineBytes { // a whole buffer and no newline: the line is too long
				res.unparseable++
				off, filled, skip = pos, 0, true
			} else {
				nb := make([]byte, min(len(buf)*2, MaxLineBytes+1))
				copy(nb, buf[:filled])
				buf = nb
			}
		}
		if skip && filled == 0 {
			pos = skipHole(fh, pos, j.stat.Size)
			off = pos
		}
		want := min(int64(len(buf)-filled), left, j.stat.Size-pos)
		if want <= 0 {
			break
		}
		n, rerr := fh.ReadAt(buf[filled:filled+int(want)], pos)
		pos, left, filled = pos+int64(n), left-int64(n), filled+n
		data := buf[:filled]
		consumed := 0
		if skip {
			if nl := bytes.IndexByte(data, '\n'); nl < 0 {
				consumed = filled
			} else {
				consumed, skip = nl+1, false
			}
		}
		for !skip {
			nl := bytes.IndexByte(data[consumed:], '\n')
			if nl < 0 {
				break
			}
			line := data[consumed : consumed+nl]
			consumed += nl + 1
			if len(line) > 0 && line[len(line)-1] == '\r' {
				line = line[:len(line)-1]
			}
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if fp.Line(line, emit) {
				res.lines++
			} else {
				res.unparseable++
			}
		}
		off += int64(consumed)
		filled = copy(buf, data[consumed:])
		if rerr != nil || n == 0 {
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				res.err = fmt.Errorf("spend: read: %w", rerr)
			}
			break
		}
	}
	res.offset, res.skip, res.more = off, skip, res.err == nil && pos < j.stat.Size
	res.state = fp.State()
	if q, ok := fp.(QuotaReporter); ok {
		res.quota = q.Quota()
	}
	if res.tail, err = tailHash(fh, off); err != nil && res.err == nil {
		res.err = err
	}
	return res, buf
}
