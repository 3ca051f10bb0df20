package jsonscan

import (
	"bytes"
	"encoding/json"
)

// SkipSpace returns the index of the first non-whitespace byte at or after i.
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// StringEnd returns the index just past the closing quote of the string starting at b[i] == '"'; ok is false for
// an unterminated string.
func StringEnd(b []byte, i int) (end int, ok bool) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, false
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
}

// SkipValue returns the index just past the JSON value starting at b[i] (after whitespace).
func SkipValue(b []byte, i int) (int, bool) {
	i = SkipSpace(b, i)
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; c {
	case '"':
		end, ok := StringEnd(b, i)
		return end, ok
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, ok := StringEnd(b, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	default:
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if j == i {
					return 0, false
				}
				return j, true
			}
			j++
		}
		return j, j > i
	}
}

// Object calls fn for each member of the object starting at b[i] (after whitespace) with the raw key bytes
// (without quotes) and the value's bounds; fn returns false to stop early. It returns the index past the object.
func Object(b []byte, i int, fn func(key []byte, vs, ve int) bool) (int, bool) {
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		kend, ok := StringEnd(b, i)
		if !ok {
			return 0, false
		}
		key := b[i+1 : kend-1]
		i = SkipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		vs := SkipSpace(b, i+1)
		ve, ok := SkipValue(b, vs)
		if !ok {
			return 0, false
		}
		if !fn(key, vs, ve) {
			return ve, true
		}
		i = SkipSpace(b, ve)
		if i >= len(b) {
			return 0, false
		}
		if b[i] == '}' {
			return i + 1, true
		}
		if b[i] != ',' {
			return 0, false
		}
		i = SkipSpace(b, i+1)
	}
}

// String decodes a JSON string value; ok is false when v is not a string.
func String(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}

// Uint decodes a non-negative JSON integer; ok is false for negatives, fractions, strings and overflow.
func Uint(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// IsNull reports whether v is the JSON null literal.
func IsNull(v []byte) bool { return string(v) == "null" }

// Bool decodes a JSON boolean.
func Bool(v []byte) (val, ok bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// ParseTimeMilli parses an RFC 3339 timestamp into Unix milliseconds.
func ParseTimeMilli(s string) (int64, bool) { return parseTime(s) }
