package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// A history record (the value of an h/ key) is binary:
//
//	byte 0      recordBinary (a JSON record, written by earlier builds, starts with '{')
//	byte 1      event type code (see typeCodes)
//	byte 2      flags: recordLabelsChanged
//	bytes 3-10  event time, Unix nanoseconds (int64 BE)
//	            if recordLabelsChanged: uvarint count, then count pairs of
//	            uvarint-length-prefixed label key and value (the labels before the event)
//	rest        the object's JSON
//
// seq, resource, namespace and name are not stored: they are in the key.
// The binary header is ~60 bytes shorter than the JSON wrapper it replaced,
// and every synced write carries one record.
const (
	recordBinary        byte = 0x01
	recordLabelsChanged byte = 1 << 0
	recordHeaderLen          = 11
)

// typeCodes are the event types' one-byte codes in records.
var typeCodes = [...]struct {
	code byte
	typ  string
}{{'A', TypeAdded}, {'M', TypeModified}, {'S', TypeStatus}, {'T', TypeTerminating}, {'D', TypeDeleted}}

func codeOfType(typ string) (byte, bool) {
	for _, c := range typeCodes {
		if c.typ == typ {
			return c.code, true
		}
	}
	return 0, false
}

func typeOfCode(code byte) (string, bool) {
	for _, c := range typeCodes {
		if c.code == code {
			return c.typ, true
		}
	}
	return "", false
}

// encodeRecord appends the record of ev, object included, to b.
func encodeRecord(b []byte, ev *event) ([]byte, error) {
	code, ok := codeOfType(ev.typ)
	if !ok {
		return b, fmt.Errorf("event %d has unknown type %q", ev.seq, ev.typ)
	}
	var flags byte
	if ev.labelsChanged {
		flags |= recordLabelsChanged
	}
	b = append(b, recordBinary, code, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(ev.time.UnixNano()))
	if ev.labelsChanged {
		b = binary.AppendUvarint(b, uint64(len(ev.prevLabels)))
		for k, v := range ev.prevLabels {
			b = binary.AppendUvarint(b, uint64(len(k)))
			b = append(b, k...)
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
	}
	if raw := ev.data.raw; raw != nil {
		return append(b, raw...), nil
	}
	if obj := ev.data.tree.Load(); obj != nil {
		return appendJSON(b, obj.Object)
	}
	return b, fmt.Errorf("event %d has no object", ev.seq)
}

// parsedRecord is a history record split into its parts; object aliases
// the record's bytes.
type parsedRecord struct {
	typ           string
	time          time.Time
	labelsChanged bool
	prevLabels    map[string]string
	object        []byte
}

var errRecordTruncated = errors.New("truncated history record")

// parseRecord splits a stored history record, binary or (from earlier
// builds) JSON.
func parseRecord(rec []byte) (parsedRecord, error) {
	if len(rec) > 0 && rec[0] == '{' {
		return parseJSONRecord(rec)
	}
	if len(rec) < recordHeaderLen {
		return parsedRecord{}, errRecordTruncated
	}
	if rec[0] != recordBinary {
		return parsedRecord{}, fmt.Errorf("unknown history record format %#x", rec[0])
	}
	if rec[2]&^recordLabelsChanged != 0 {
		return parsedRecord{}, fmt.Errorf("unknown history record flags %#x", rec[2])
	}
	typ, ok := typeOfCode(rec[1])
	if !ok {
		return parsedRecord{}, fmt.Errorf("unknown event type code %#x", rec[1])
	}
	r := parsedRecord{typ: typ, time: time.Unix(0, int64(binary.BigEndian.Uint64(rec[3:11]))).UTC()}
	p := rec[recordHeaderLen:]
	if rec[2]&recordLabelsChanged != 0 {
		r.labelsChanged = true
		n, w := binary.Uvarint(p)
		if w <= 0 || n > uint64(len(p)) {
			return parsedRecord{}, errRecordTruncated
		}
		p = p[w:]
		r.prevLabels = make(map[string]string, n)
		for range n {
			var k, v string
			var err error
			if k, p, err = cutUvarintString(p); err != nil {
				return parsedRecord{}, err
			}
			if v, p, err = cutUvarintString(p); err != nil {
				return parsedRecord{}, err
			}
			r.prevLabels[k] = v
		}
	}
	if len(p) == 0 {
		return parsedRecord{}, errRecordTruncated
	}
	r.object = p
	return r, nil
}

func cutUvarintString(p []byte) (string, []byte, error) {
	n, w := binary.Uvarint(p)
	if w <= 0 || n > uint64(len(p)-w) {
		return "", nil, errRecordTruncated
	}
	return string(p[w : w+int(n)]), p[w+int(n):], nil
}

// jsonRecord is the JSON form of a history record written by earlier builds.
type jsonRecord struct {
	Type          string            `json:"type"`
	Time          time.Time         `json:"time"`
	LabelsChanged bool              `json:"labelsChanged,omitempty"`
	PrevLabels    map[string]string `json:"prevLabels,omitempty"`
	Object        json.RawMessage   `json:"object"`
}

func parseJSONRecord(rec []byte) (parsedRecord, error) {
	var r jsonRecord
	if err := json.Unmarshal(rec, &r); err != nil {
		return parsedRecord{}, fmt.Errorf("decode history record: %w", err)
	}
	return parsedRecord{typ: r.Type, time: r.Time, labelsChanged: r.LabelsChanged, prevLabels: r.PrevLabels, object: r.Object}, nil
}

// decodeRecord decodes the history entry stored under key hk.
func decodeRecord(hk, b []byte) (*event, error) {
	res, ns, name, seq, err := splitHistoryKey(hk)
	if err != nil {
		return nil, err
	}
	r, err := parseRecord(b)
	if err != nil {
		return nil, fmt.Errorf("store: decode event %d: %w", seq, err)
	}
	obj, err := decodeObject(r.object)
	if err != nil {
		return nil, fmt.Errorf("store: decode event %d: %w", seq, err)
	}
	return &event{
		seq: seq, typ: r.typ, resource: res, ns: ns, name: name, time: r.time,
		data: treeData(obj), labels: obj.GetLabels(), labelsChanged: r.labelsChanged, prevLabels: r.prevLabels,
	}, nil
}
