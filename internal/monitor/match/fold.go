package match

import (
	"encoding/binary"
	"sort"
	"unicode"
	"unicode/utf8"
	"unsafe"
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

const (
	hiBits = 0x8080808080808080
	ones   = 0x0101010101010101
)

// lowerSWAR lowers the ASCII letters of eight ASCII bytes at once: a byte is
// upper case when adding 0x80-'A' carries into its high bit and adding
// 0x7f-'Z' does not; no byte's sum carries into the next one because every
// byte is < 0x80.
func lowerSWAR(x uint64) uint64 {
	geA := x + ones*(0x80-'A')
	gtZ := x + ones*(0x7f-'Z')
	upper := geA &^ gtZ & hiBits
	return x | upper>>2
}

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
		// ASCII run: eight bytes at a time, then byte by byte.
		j := i
		for j+8 <= len(s) {
			x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[j:]), 8))
			if x&hiBits != 0 {
				break
			}
			buf = binary.LittleEndian.AppendUint64(buf, lowerSWAR(x))
			j += 8
		}
		for j < len(s) && s[j] < utf8.RuneSelf {
			buf = append(buf, lowerASCII[s[j]])
			j++
		}
		i = j
		if i == len(s) {
			break
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
