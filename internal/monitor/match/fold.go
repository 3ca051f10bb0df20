package match

import (
	"slices"
	"sort"
	"unicode"
	"unicode/utf8"
)

// lowerASCII maps each byte to its ASCII lower case; bytes ≥ 0x80 map to
// themselves (they are handled rune by rune).
var lowerASCII = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] = byte(i) + 'a' - 'A'
		}
	}
	return t
}()

// shift says that from folded offset at on, original = folded + delta.
type shift struct {
	at, delta int
}

// folded is a text lowered rune by rune with unicode.ToLower (the mapping of
// strings.ToLower), plus what is needed to map its offsets back: lowering
// changes a rune's encoded length for a few runes (İ U+0130 → i, ẞ U+1E9E → ß,
// K U+212A → k, Ⱥ U+023A → ⱥ, …), and the delta after each such rune is
// recorded. Bytes that are not valid UTF-8 are kept as they are.
type folded struct {
	buf    []byte
	shifts []shift
}

// fold lowers s into f.buf, reusing its storage.
func (f *folded) fold(s string) {
	buf := f.buf[:0]
	if cap(buf) < len(s) {
		buf = make([]byte, 0, len(s)+len(s)/16)
	}
	f.shifts = f.shifts[:0]
	delta := 0
	i := 0
	for i < len(s) {
		// ASCII run: one table lookup per byte, written in place.
		j := i
		for j < len(s) && s[j] < utf8.RuneSelf {
			j++
		}
		if j > i {
			n := len(buf)
			buf = slices.Grow(buf, j-i)[:n+j-i] // lowering may have grown the text (Ⱥ → ⱥ)
			dst := buf[n:]
			for k, c := range []byte(s[i:j]) {
				dst[k] = lowerASCII[c]
			}
			i = j
			if i == len(s) {
				break
			}
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			buf = append(buf, s[i])
			i++
			continue
		}
		lr := unicode.ToLower(r)
		if lr == r {
			buf = append(buf, s[i:i+n]...)
		} else {
			buf = utf8.AppendRune(buf, lr)
		}
		i += n
		if d := i - len(buf); d != delta {
			delta = d
			f.shifts = append(f.shifts, shift{at: len(buf), delta: d})
		}
	}
	f.buf = buf
}

// orig maps a folded offset that lies on a rune boundary back to the
// original text's offset.
func (f *folded) orig(off int) int {
	if len(f.shifts) == 0 {
		return off
	}
	// The last shift at or before off applies.
	k := sort.Search(len(f.shifts), func(k int) bool { return f.shifts[k].at > off })
	if k == 0 {
		return off
	}
	return off + f.shifts[k-1].delta
}
