package store

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The write path encodes objects with this small encoder instead of
// encoding/json's reflection: objects are already canonical JSON values
// (see canonical), so a direct walk is several times cheaper. Key order is
// not sorted; readers never depend on it.

// appendJSON appends the JSON encoding of a canonical value.
func appendJSON(b []byte, v interface{}) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return appendJSONString(b, x), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return b, fmt.Errorf("unsupported number %v", x)
		}
		return strconv.AppendFloat(b, x, 'g', -1, 64), nil
	case map[string]interface{}:
		b = append(b, '{')
		first := true
		for k, e := range x {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendJSONString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendJSON(b, e); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case []interface{}:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	default:
		enc, err := json.Marshal(x)
		if err != nil {
			return b, fmt.Errorf("encode %T: %w", x, err)
		}
		return append(b, enc...), nil
	}
}

const hexDigits = "0123456789abcdef"

// swarOnes and swarHigh are the byte-wise constants of the eight-bytes-at-a-
// time scan in appendJSONString.
const (
	swarOnes = 0x0101010101010101
	swarHigh = 0x8080808080808080
)

// appendJSONString appends s as a JSON string (no HTML escaping; invalid
// UTF-8 becomes U+FFFD, as encoding/json does).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip eight plain bytes at a time: none below 0x20, '"', '\\' or
		// non-ASCII (the tests may report false hits, never misses).
		for i+8 <= len(s) {
			w := s[i : i+8]
			x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
				uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
			q, bs := x^(swarOnes*'"'), x^(swarOnes*'\\')
			if (x|(x-swarOnes*0x20)&^x|(q-swarOnes)&^q|(bs-swarOnes)&^bs)&swarHigh != 0 {
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// canonical returns a deep copy of v in the form JSON decoding by the API
// machinery produces (maps, slices, string, bool, nil, int64, and float64
// only for non-integral or huge values). ok is false if v holds a type that
// needs a real JSON round trip (structs, typed maps, float32, json.Number...).
func canonical(v interface{}) (out interface{}, ok bool, err error) {
	switch x := v.(type) {
	case nil, bool, string, int64:
		return x, true, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, false, fmt.Errorf("unsupported number %v", x)
		}
		if x == math.Trunc(x) && math.Abs(x) < 9.2e18 {
			return int64(x), true, nil
		}
		return x, true, nil
	case int:
		return int64(x), true, nil
	case int32:
		return int64(x), true, nil
	case int16:
		return int64(x), true, nil
	case int8:
		return int64(x), true, nil
	case uint32:
		return int64(x), true, nil
	case uint16:
		return int64(x), true, nil
	case uint8:
		return int64(x), true, nil
	case map[string]interface{}:
		m := make(map[string]interface{}, len(x))
		for k, e := range x {
			c, ok, err := canonical(e)
			if !ok || err != nil {
				return nil, ok, err
			}
			m[k] = c
		}
		return m, true, nil
	case []interface{}:
		l := make([]interface{}, len(x))
		for i, e := range x {
			c, ok, err := canonical(e)
			if !ok || err != nil {
				return nil, ok, err
			}
			l[i] = c
		}
		return l, true, nil
	}
	return nil, false, nil
}

// createSuffixMax bounds what applyCreate appends to encodeCreate's output:
// creationTimestamp, generation, resourceVersion and the closing braces.
const createSuffixMax = 128

// encodeCreate returns a private canonical copy of a new object (without
// status, which Create drops, and without server-owned metadata) and its
// JSON, which ends inside metadata, after uid, so that the writer only
// appends the fields that depend on the commit; the JSON has capacity for
// them. Canonical input is copied and encoded in one walk; anything else
// takes a JSON round trip first (see normalize).
func (s *Store) encodeCreate(obj *unstructured.Unstructured, uid string) (*unstructured.Unstructured, []byte, error) {
	bp, _ := s.encBufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer s.encBufs.Put(bp)
	out, b, ok, err := encodeCreateFast(obj.Object, (*bp)[:0])
	if err == nil && !ok {
		var n *unstructured.Unstructured
		if n, err = normalize(obj); err == nil {
			out, b, ok, err = encodeCreateFast(n.Object, b[:0])
			if err == nil && !ok {
				err = fmt.Errorf("object is not canonical after a JSON round trip")
			}
		}
	}
	*bp = b
	if err != nil {
		return nil, nil, err
	}
	b = append(b, `"uid":`...)
	b = appendJSONString(b, uid)
	*bp = b
	pre := make([]byte, len(b), len(b)+createSuffixMax)
	copy(pre, b)
	return &unstructured.Unstructured{Object: out}, pre, nil
}

// encodeCreateFast copies and encodes obj as encodeCreate describes; ok is
// false if obj holds values that are not canonical (see canonical).
func encodeCreateFast(obj map[string]interface{}, b []byte) (out map[string]interface{}, _ []byte, ok bool, err error) {
	inMeta, isMap := obj["metadata"].(map[string]interface{})
	if !isMap {
		return nil, b, false, fmt.Errorf("metadata must be an object")
	}
	out = make(map[string]interface{}, len(obj))
	b = append(b, '{')
	var c interface{}
	for f, v := range obj {
		if f == "metadata" || f == "status" {
			continue
		}
		b = appendJSONString(b, f)
		b = append(b, ':')
		if c, b, ok, err = canonicalAppend(v, b); !ok || err != nil {
			return nil, b, ok, err
		}
		out[f] = c
		b = append(b, ',')
	}
	md := make(map[string]interface{}, 8) // room for the server's fields
	b = append(b, `"metadata":{`...)
	for f, v := range inMeta {
		switch f {
		case "name", "namespace":
		case "generateName":
			if gn, isStr := v.(string); !isStr || gn == "" {
				continue
			}
		default:
			if !isUserMeta(f) || isEmpty(v) {
				continue
			}
		}
		b = appendJSONString(b, f)
		b = append(b, ':')
		if c, b, ok, err = canonicalAppend(v, b); !ok || err != nil {
			return nil, b, ok, err
		}
		md[f] = c
		b = append(b, ',')
	}
	out["metadata"] = md
	return out, b, true, nil
}

// canonicalAppend is canonical that also appends the value's JSON to b.
func canonicalAppend(v interface{}, b []byte) (out interface{}, _ []byte, ok bool, err error) {
	switch x := v.(type) {
	case string:
		return v, appendJSONString(b, x), true, nil // v: no new boxing
	case map[string]interface{}:
		m := make(map[string]interface{}, len(x))
		b = append(b, '{')
		first := true
		for k, e := range x {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendJSONString(b, k)
			b = append(b, ':')
			var c interface{}
			if c, b, ok, err = canonicalAppend(e, b); !ok || err != nil {
				return nil, b, ok, err
			}
			m[k] = c
		}
		return m, append(b, '}'), true, nil
	case []interface{}:
		l := make([]interface{}, len(x))
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var c interface{}
			if c, b, ok, err = canonicalAppend(e, b); !ok || err != nil {
				return nil, b, ok, err
			}
			l[i] = c
		}
		return l, append(b, ']'), true, nil
	}
	c, ok, err := canonical(v)
	if !ok || err != nil {
		return nil, b, ok, err
	}
	b, err = appendJSON(b, c)
	return c, b, err == nil, err
}

// encodeRecord appends the record JSON (see record) of ev, object
// included, to b; timeRFC3339Nano is ev.time formatted. The object comes last, so recordObject can find it without
// decoding the record.
func encodeRecord(b []byte, ev *event, timeRFC3339Nano []byte) ([]byte, error) {
	b = append(b, `{"type":`...)
	b = appendJSONString(b, ev.typ)
	b = append(b, `,"time":"`...)
	b = append(b, timeRFC3339Nano...)
	b = append(b, '"')
	if ev.labelsChanged {
		b = append(b, `,"labelsChanged":true,"prevLabels":{`...)
		first := true
		for k, v := range ev.prevLabels {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, v)
		}
		b = append(b, '}')
	}
	b = append(b, `,"object":`...)
	if raw := ev.data.raw; raw != nil {
		b = append(b, raw...)
	} else if obj := ev.data.tree.Load(); obj != nil {
		var err error
		if b, err = appendJSON(b, obj.Object); err != nil {
			return b, err
		}
	} else {
		return b, fmt.Errorf("event %d has no object", ev.seq)
	}
	return append(b, '}'), nil
}

// recordObject returns the object JSON inside a stored history record.
func recordObject(rec []byte) ([]byte, error) {
	if obj, ok := recordObjectFast(rec); ok {
		return obj, nil
	}
	var r record
	if err := json.Unmarshal(rec, &r); err != nil {
		return nil, fmt.Errorf("decode history record: %w", err)
	}
	return r.Object, nil
}

// recordObjectFast finds the object in a record laid out by encodeRecord
// without decoding it; ok is false for any other layout.
func recordObjectFast(rec []byte) (obj []byte, ok bool) {
	p, ok := cutPrefix(rec, `{"type":`)
	if ok {
		p, ok = skipJSONString(p)
	}
	if ok {
		p, ok = cutPrefix(p, `,"time":`)
	}
	if ok {
		p, ok = skipJSONString(p)
	}
	if !ok {
		return nil, false
	}
	if q, labels := cutPrefix(p, `,"labelsChanged":true,"prevLabels":{`); labels {
		p = q
		for first := true; ; first = false {
			if len(p) > 0 && p[0] == '}' {
				p = p[1:]
				break
			}
			if !first {
				if p, ok = cutPrefix(p, ","); !ok {
					return nil, false
				}
			}
			if p, ok = skipJSONString(p); ok {
				p, ok = cutPrefix(p, ":")
			}
			if ok {
				p, ok = skipJSONString(p)
			}
			if !ok {
				return nil, false
			}
		}
	}
	if p, ok = cutPrefix(p, `,"object":`); !ok || len(p) < 3 || p[0] != '{' || p[len(p)-1] != '}' {
		return nil, false
	}
	return p[:len(p)-1], true
}

func cutPrefix(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return b, false
	}
	return b[len(prefix):], true
}

// skipJSONString skips the JSON string at the start of b.
func skipJSONString(b []byte) ([]byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return b, false
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return b[i+1:], true
		}
	}
	return b, false
}
