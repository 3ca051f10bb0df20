package match

import (
	"strings"
	"testing"
)

func TestLowerSWAR(t *testing.T) {
	// Every ASCII byte in every lane, next to every other value of a lane
	// neighbour, against the byte table.
	for c := range 128 {
		for n := range 128 {
			for lane := range 8 {
				var in, want [8]byte
				for k := range 8 {
					in[k] = byte(n)
				}
				in[lane] = byte(c)
				for k := range 8 {
					want[k] = lowerASCII[in[k]]
				}
				var f folded
				f.fold(string(in[:]))
				if string(f.buf) != string(want[:]) {
					t.Fatalf("%q lowered to %q, want %q", in, f.buf, want)
				}
			}
		}
	}
}

func TestFoldLongMixedText(t *testing.T) {
	text := strings.Repeat("Hello WORLD, Straẞe İstanbul \xff Ⱥbc KELVIN ", 50)
	var f folded
	f.fold(text)
	if want := strings.ToLower(strings.ReplaceAll(text, "\xff", "\x00")); string(f.buf) != strings.ReplaceAll(want, "\x00", "\xff") {
		t.Errorf("fold differs from strings.ToLower:\n%q\n%q", f.buf, want)
	}
	// Offsets at rune boundaries map back: the folded text's i-th rune starts
	// where the original's i-th rune starts.
	var orig, low []int
	for i := range text {
		orig = append(orig, i)
	}
	for i := range string(f.buf) {
		low = append(low, f.orig(i))
	}
	if len(orig) != len(low) {
		t.Fatalf("%d runes, folded %d", len(orig), len(low))
	}
	for k := range orig {
		if orig[k] != low[k] {
			t.Fatalf("rune %d: folded offset maps to %d, want %d", k, low[k], orig[k])
		}
	}
	if f.orig(len(f.buf)) != len(text) {
		t.Errorf("end maps to %d, want %d", f.orig(len(f.buf)), len(text))
	}
}
