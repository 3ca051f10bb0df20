package store

import (
	"bytes"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// groupBatch builds one group's pebble batch. Point writes are collected
// and reach the batch in key order when the group is committed: pebble
// inserts a batch into its memtable with one skiplist inserter that reuses
// its search path when the next key lies near the last one, while a
// group's writes in arrival order alternate between the history,
// projection, log and side-table ranges and make every insert search the
// whole list. The sort is stable, so a later write of the same key in the
// group still wins. Range deletions go into the batch at once, ahead of
// the point writes; the writer never deletes a range holding a key its own
// group writes.
type groupBatch struct {
	pb  *pebble.Batch
	buf []byte // keys and values of ops
	ops []pointOp
}

// pointOp is a Set (buf[key:val] → buf[val:end]) or, with del, a Delete
// of buf[key:val].
type pointOp struct {
	key, val, end int
	del           bool
}

// maxKeptBatchBuf bounds the encode buffer a groupBatch keeps between
// groups (one group of large objects must not pin its size for good).
const maxKeptBatchBuf = 4 << 20

// reset starts a group on pb.
func (gb *groupBatch) reset(pb *pebble.Batch) {
	gb.pb = pb
	if cap(gb.buf) > maxKeptBatchBuf {
		gb.buf = nil
	}
	gb.buf, gb.ops = gb.buf[:0], gb.ops[:0]
}

// set records key → val; both are copied.
func (gb *groupBatch) set(key, val []byte) {
	k := len(gb.buf)
	gb.buf = append(gb.buf, key...)
	v := len(gb.buf)
	gb.buf = append(gb.buf, val...)
	gb.ops = append(gb.ops, pointOp{key: k, val: v, end: len(gb.buf)})
}

// setEncoded records key (copied) → the value enc appends to the buffer it
// is given, so a value is encoded straight into the batch's buffer.
func (gb *groupBatch) setEncoded(key []byte, enc func([]byte) ([]byte, error)) error {
	k := len(gb.buf)
	gb.buf = append(gb.buf, key...)
	v := len(gb.buf)
	b, err := enc(gb.buf)
	if err != nil {
		gb.buf = gb.buf[:k]
		return err
	}
	gb.buf = b
	gb.ops = append(gb.ops, pointOp{key: k, val: v, end: len(gb.buf)})
	return nil
}

// delete records the deletion of key (copied).
func (gb *groupBatch) delete(key []byte) {
	k := len(gb.buf)
	gb.buf = append(gb.buf, key...)
	gb.ops = append(gb.ops, pointOp{key: k, val: len(gb.buf), end: len(gb.buf), del: true})
}

// deleteRange deletes [start, end) in the batch at once.
func (gb *groupBatch) deleteRange(start, end []byte) error {
	return gb.pb.DeleteRange(start, end, nil)
}

// empty reports whether the group writes nothing.
func (gb *groupBatch) empty() bool {
	return len(gb.ops) == 0 && gb.pb.Empty()
}

// commit writes the point writes into the batch in key order and returns
// the batch, which the group now owns.
func (gb *groupBatch) commit() (*pebble.Batch, error) {
	buf := gb.buf
	slices.SortStableFunc(gb.ops, func(a, b pointOp) int {
		return bytes.Compare(buf[a.key:a.val], buf[b.key:b.val])
	})
	pb := gb.pb
	gb.pb = nil
	for _, op := range gb.ops {
		var err error
		if op.del {
			err = pb.Delete(buf[op.key:op.val], nil)
		} else {
			err = pb.Set(buf[op.key:op.val], buf[op.val:op.end], nil)
		}
		if err != nil {
			return pb, err
		}
	}
	return pb, nil
}
