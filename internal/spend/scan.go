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

// fileStat is what the index compares to decide whether a file changed.
type fileStat struct {
	Size    int64
	MtimeNs int64
	Ino     uint64
}

func statFile(path string) (fileStat, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStat{}, fmt.Errorf("spend: stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fileStat{}, fmt.Errorf("spend: %s is not a regular file", path)
	}
	st := fileStat{Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.Ino = sys.Ino
	}
	return st, nil
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

// scanJob is one file to read from Offset up to Stat.Size.
type scanJob struct {
	entry  *fileEntry
	parser SessionParser
	stat   fileStat
	offset int64
	state  []byte
}

// scanResult is what reading one file produced.
type scanResult struct {
	job         *scanJob
	events      []Event
	lines       int64
	unparseable int64
	offset      int64
	tail        uint64
	state       []byte
	quota       *Quota
	err         error
}

const initialBuf = 1 << 20

// scan reads the new complete lines of one file.
func (j *scanJob) scan(buf []byte) (res scanResult, outBuf []byte) {
	res = scanResult{job: j, offset: j.offset, state: j.state}
	fp, err := j.parser.NewFile(j.entry.Path, j.state)
	if err != nil {
		res.err = err
		return res, buf
	}
	fh, err := os.Open(j.entry.Path)
	if err != nil {
		res.err = fmt.Errorf("spend: open: %w", err)
		return res, buf
	}
	defer func() { _ = fh.Close() }()
	remaining := j.stat.Size - j.offset
	r := io.NewSectionReader(fh, j.offset, max(remaining, 0))
	emit := func(ev Event) { res.events = append(res.events, ev) }
	off := j.offset
	filled := 0
	for {
		if filled == len(buf) {
			nb := make([]byte, len(buf)*2)
			copy(nb, buf[:filled])
			buf = nb
		}
		n, rerr := r.Read(buf[filled:])
		filled += n
		data := buf[:filled]
		consumed := 0
		for {
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
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				res.err = fmt.Errorf("spend: read: %w", rerr)
			}
			break
		}
	}
	res.offset = off
	res.state = fp.State()
	if q, ok := fp.(QuotaReporter); ok {
		res.quota = q.Quota()
	}
	if res.tail, err = tailHash(fh, off); err != nil && res.err == nil {
		res.err = err
	}
	return res, buf
}
