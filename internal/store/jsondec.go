package store

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeJSONObject decodes a JSON object into the canonical form the API
// machinery's JSON decoding produces (see decodeObject): maps, slices,
// strings, bools, nil, int64 for integer literals that fit and float64 for
// every other number. It is a direct scanner for the store's own encodings,
// several times cheaper than encoding/json's reflection; callers fall back to
// the API machinery's decoder when it reports an error.
func decodeJSONObject(b []byte) (map[string]interface{}, error) {
	d := jsonDecoder{b: b}
	d.space()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return nil, d.errorf("want an object")
	}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.i != len(d.b) {
		return nil, d.errorf("trailing data")
	}
	return v.(map[string]interface{}), nil
}

// maxJSONDepth bounds nesting, as encoding/json does.
const maxJSONDepth = 10000

type jsonDecoder struct {
	b []byte
	i int
}

func (d *jsonDecoder) errorf(format string, args ...interface{}) error {
	return fmt.Errorf("json offset %d: %s", d.i, fmt.Sprintf(format, args...))
}

func (d *jsonDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *jsonDecoder) value(depth int) (interface{}, error) {
	if depth > maxJSONDepth {
		return nil, d.errorf("nested too deeply")
	}
	d.space()
	if d.i >= len(d.b) {
		return nil, d.errorf("unexpected end")
	}
	switch c := d.b[d.i]; {
	case c == '{':
		d.i++
		m := make(map[string]interface{})
		d.space()
		if d.i < len(d.b) && d.b[d.i] == '}' {
			d.i++
			return m, nil
		}
		for {
			d.space()
			k, err := d.str()
			if err != nil {
				return nil, err
			}
			d.space()
			if d.i >= len(d.b) || d.b[d.i] != ':' {
				return nil, d.errorf("want ':'")
			}
			d.i++
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			m[k] = v
			d.space()
			if d.i >= len(d.b) {
				return nil, d.errorf("unexpected end")
			}
			if d.b[d.i] == ',' {
				d.i++
				continue
			}
			if d.b[d.i] == '}' {
				d.i++
				return m, nil
			}
			return nil, d.errorf("want ',' or '}'")
		}
	case c == '[':
		d.i++
		l := []interface{}{}
		d.space()
		if d.i < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return l, nil
		}
		for {
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
			d.space()
			if d.i >= len(d.b) {
				return nil, d.errorf("unexpected end")
			}
			if d.b[d.i] == ',' {
				d.i++
				continue
			}
			if d.b[d.i] == ']' {
				d.i++
				return l, nil
			}
			return nil, d.errorf("want ',' or ']'")
		}
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return nil, d.errorf("unexpected character %q", d.b[d.i])
}

func (d *jsonDecoder) literal(lit string) error {
	if len(d.b)-d.i < len(lit) || string(d.b[d.i:d.i+len(lit)]) != lit {
		return d.errorf("want %s", lit)
	}
	d.i += len(lit)
	return nil
}

// number decodes a JSON number: int64 when it is an integer literal that
// fits, float64 otherwise (as json.Number.Int64 then Float64 would).
func (d *jsonDecoder) number() (interface{}, error) {
	start := d.i
	if d.b[d.i] == '-' {
		d.i++
	}
	digits := d.digits()
	if digits == 0 || (digits > 1 && d.b[d.i-digits] == '0') {
		return nil, d.errorf("malformed number")
	}
	integer := true
	if d.i < len(d.b) && d.b[d.i] == '.' {
		integer = false
		d.i++
		if d.digits() == 0 {
			return nil, d.errorf("malformed number")
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		integer = false
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if d.digits() == 0 {
			return nil, d.errorf("malformed number")
		}
	}
	lit := string(d.b[start:d.i])
	if integer {
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return nil, d.errorf("number %s: %v", lit, err)
	}
	return f, nil
}

func (d *jsonDecoder) digits() int {
	n := 0
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
		n++
	}
	return n
}

// str decodes a JSON string, with encoding/json's handling of invalid
// UTF-8 and unpaired surrogates (both become U+FFFD).
func (d *jsonDecoder) str() (string, error) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return "", d.errorf("want a string")
	}
	d.i++
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := string(d.b[start:d.i])
			d.i++
			return s, nil
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return d.strSlow(start)
		}
		d.i++
	}
	return "", d.errorf("unterminated string")
}

func (d *jsonDecoder) strSlow(start int) (string, error) {
	out := append(make([]byte, 0, d.i-start+16), d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return string(out), nil
		case c < 0x20:
			return "", d.errorf("control character in string")
		case c == '\\':
			d.i++
			if d.i >= len(d.b) {
				return "", d.errorf("unterminated string")
			}
			e := d.b[d.i]
			d.i++
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", d.errorf("malformed \\u escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if len(d.b)-d.i >= 6 && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
						save := d.i
						d.i += 2
						var ok2 bool
						if r2, ok2 = d.hex4(); !ok2 {
							return "", d.errorf("malformed \\u escape")
						}
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							continue
						}
						d.i = save
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", d.errorf("malformed escape")
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			d.i++
		default:
			r, size := utf8.DecodeRune(d.b[d.i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, d.b[d.i:d.i+size]...)
			}
			d.i += size
		}
	}
	return "", d.errorf("unterminated string")
}

func (d *jsonDecoder) hex4() (rune, bool) {
	if len(d.b)-d.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	d.i += 4
	return r, true
}
