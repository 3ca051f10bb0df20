package store

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// The watch log (e/) has one entry per group, keyed by the sequence number
// of the group's first event: a write costs its history record and its
// projection, and the group shares one log entry (see ADR 0015). An entry's
// value is logGroupTag followed, for each event in sequence order, by the
// uvarint length of its history key and the key. Stores written before
// layout 3 hold one entry per event whose value is the history key itself
// (it starts with 'h', never with logGroupTag); both forms are read.
const logGroupTag = 0x00

// appendLogGroup appends the watch-log value of events (non-empty, in
// sequence order) to dst.
func appendLogGroup(dst []byte, events []*event) []byte {
	dst = append(dst, logGroupTag)
	var hk [256]byte
	for _, ev := range events {
		k := appendHistoryKey(hk[:0], ev.resource, ev.ns, ev.name, ev.seq)
		dst = binary.AppendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
	}
	return dst
}

// forEachLogEvent calls fn with the history key of every event a watch-log
// value lists, in sequence order, and stops at fn's first error. The keys
// alias val.
func forEachLogEvent(val []byte, fn func(historyKey []byte) error) error {
	if len(val) == 0 || val[0] != logGroupTag {
		return fn(val) // layout 1 and 2: one event, the value is its key
	}
	for rest := val[1:]; len(rest) > 0; {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return fmt.Errorf("store: corrupt watch-log entry (%d bytes)", len(val))
		}
		if err := fn(rest[w : w+int(n)]); err != nil {
			return err
		}
		rest = rest[w+int(n):]
	}
	return nil
}

// logEntryHolding returns the key of the watch-log entry in pebble that may
// hold seq: the last entry whose first event is at or before seq, or
// eventKey(seq) when there is none. It reads pebble, so the entry of a
// group still being built is not seen.
func (s *Store) logEntryHolding(seq uint64) ([]byte, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixEvent), UpperBound: eventKey(seq + 1)})
	if err != nil {
		return nil, fmt.Errorf("store: read watch log: %w", err)
	}
	k := eventKey(seq)
	if it.Last() {
		k = append(k[:0], it.Key()...)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("store: read watch log: %w", err)
	}
	return k, nil
}
