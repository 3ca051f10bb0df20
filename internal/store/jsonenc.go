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

// encodeCreate completes a new object for Create and encodes it: status is
// dropped and metadata reduced to what a client owns (see isUserMeta) plus
// name, namespace and generateName, then the JSON is made, ending inside
// metadata after uid, so that the writer only appends the fields that
// depend on the commit; the JSON has capacity for them. A canonical object
// (see canonical) is completed in place and encoded in one walk without
// copying, and is itself the result; anything else is first normalized
// into a canonical copy, which becomes the result.
func (s *Store) encodeCreate(obj *unstructured.Unstructured, uid string) (*unstructured.Unstructured, []byte, error) {
	bp, _ := s.encBufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer s.encBufs.Put(bp)
	b, ok, err := encodeCreateInPlace(obj.Object, (*bp)[:0])
	if err == nil && !ok {
		if obj, err = normalize(obj); err == nil {
			b, ok, err = encodeCreateInPlace(obj.Object, b[:0])
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
	return obj, pre, nil
}

// encodeCreateInPlace encodes obj as encodeCreate describes and, only if
// every value is canonical (ok), reduces its metadata map in place and drops
// its status.
func encodeCreateInPlace(obj map[string]interface{}, b []byte) (_ []byte, ok bool, err error) {
	inMeta, isMap := obj["metadata"].(map[string]interface{})
	if !isMap {
		return b, false, fmt.Errorf("metadata must be an object")
	}
	b = append(b, '{')
	for f, v := range obj {
		if f == "metadata" || f == "status" {
			continue
		}
		b = appendJSONString(b, f)
		b = append(b, ':')
		if b, ok, err = appendCanonicalJSON(b, v); !ok || err != nil {
			return b, ok, err
		}
		b = append(b, ',')
	}
	// The metadata map is reduced in place once the whole object has been
	// encoded, so a non-canonical object is left as it was.
	var dropBuf [8]string
	drop := dropBuf[:0]
	b = append(b, `"metadata":{`...)
	for f, v := range inMeta {
		switch f {
		case "name", "namespace":
		case "generateName":
			if gn, isStr := v.(string); !isStr || gn == "" {
				drop = append(drop, f)
				continue
			}
		default:
			if !isUserMeta(f) || isEmpty(v) {
				drop = append(drop, f)
				continue
			}
		}
		b = appendJSONString(b, f)
		b = append(b, ':')
		if b, ok, err = appendCanonicalJSON(b, v); !ok || err != nil {
			return b, ok, err
		}
		b = append(b, ',')
	}
	for _, f := range drop {
		delete(inMeta, f)
	}
	delete(obj, "status")
	return b, true, nil
}

// appendCanonicalJSON appends v's JSON to b; ok is false, and b unusable,
// if v holds a value that is not canonical (see canonical).
func appendCanonicalJSON(b []byte, v interface{}) (_ []byte, ok bool, err error) {
	switch x := v.(type) {
	case string:
		return appendJSONString(b, x), true, nil
	case nil, bool, int64:
		b, err = appendJSON(b, x)
		return b, err == nil, err
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 9.2e18 {
			return b, false, nil // canonically an int64
		}
		b, err = appendJSON(b, x)
		return b, err == nil, err
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
			if b, ok, err = appendCanonicalJSON(b, e); !ok || err != nil {
				return b, ok, err
			}
		}
		return append(b, '}'), true, nil
	case []interface{}:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok, err = appendCanonicalJSON(b, e); !ok || err != nil {
				return b, ok, err
			}
		}
		return append(b, ']'), true, nil
	}
	return b, false, nil
}
