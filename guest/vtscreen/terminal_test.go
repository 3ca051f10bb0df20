package vtscreen

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func screen(t *testing.T, term *Terminal) string {
	t.Helper()
	s := term.Render()
	if len(s.Lines) != s.Rows {
		t.Fatalf("%d lines for %d rows", len(s.Lines), s.Rows)
	}
	return strings.Join(s.Lines, "|")
}

func TestScreens(t *testing.T) {
	cases := []struct {
		name, in, want string
		cx, cy         int
	}{
		{"plain", "hello", "hello|||", 5, 0},
		{"crlf", "a\r\nb\r\nc", "a|b|c|", 1, 2},
		{"lf keeps column", "ab\ncd", "ab|  cd||", 4, 1},
		{"scroll", "1\r\n2\r\n3\r\n4\r\n5\r\n6", "3|4|5|6", 1, 3},
		{"wrap at last column", "abcdefghij", "abcdefgh|ij||", 2, 1},
		{"pending wrap then CR", "abcdefgh\rX", "Xbcdefgh|||", 1, 0},
		{"no autowrap", "\x1b[?7labcdefghij", "abcdefgj|||", 7, 0},
		{"cup", "\x1b[3;4Hx", "||   x|", 4, 2},
		{"cup clamps", "\x1b[99;99Hx", "|||       x", 7, 3},
		{"relative moves", "\x1b[2B\x1b[3Cx\x1b[1A\x1b[2Dy", "|  y|   x|", 3, 1},
		{"erase line right", "abcdef\x1b[3G\x1b[K", "ab|||", 2, 0},
		{"erase line left", "abcdef\x1b[3G\x1b[1K", "   def|||", 2, 0},
		{"erase display", "aa\r\nbb\r\ncc\x1b[2;2H\x1b[J", "aa|b||", 1, 1},
		{"erase display above", "aa\r\nbb\r\ncc\x1b[2;1H\x1b[1J", "| b|cc|", 0, 1},
		{"clear all", "aa\r\nbb\x1b[2J", "|||", 2, 1},
		{"erase chars", "abcdef\x1b[2G\x1b[2X", "a  def|||", 1, 0},
		{"delete chars", "abcdef\x1b[2G\x1b[2P", "adef|||", 1, 0},
		{"insert chars", "abcdef\x1b[2G\x1b[2@", "a  bcdef|||", 1, 0},
		{"insert mode", "abc\x1b[1G\x1b[4hXY\x1b[4l", "XYabc|||", 2, 0},
		{"tab", "a\tb", "a      b|||", 7, 0}, // 8 columns: no stop left, the tab goes to the last column
		{"backspace", "ab\bc", "ac|||", 2, 0},
		{"insert lines", "1\r\n2\r\n3\x1b[2;1H\x1b[L", "1||2|3", 0, 1},
		{"delete lines", "1\r\n2\r\n3\r\n4\x1b[2;1H\x1b[2M", "1|4||", 0, 1},
		{"scroll region", "\x1b[2;3r\x1b[2;1Ha\r\nb\r\nc\r\nd", "|c|d|", 1, 2},
		{"reverse index at top", "1\r\n2\x1b[H\x1bMx", "x|1|2|", 1, 0},
		{"scroll up/down", "1\r\n2\r\n3\x1b[S", "2|3||", 1, 2},
		{"scroll down", "1\r\n2\r\n3\x1b[2T", "||1|2", 1, 2},
		{"save restore", "ab\x1b7\x1b[3;3Hx\x1b8c", "abc||  x|", 3, 0},
		{"osc skipped", "\x1b]0;title\x07a\x1b]8;;http://x\x1b\\b", "ab|||", 2, 0},
		{"dcs skipped", "\x1bP+q544e\x1b\\ok", "ok|||", 2, 0},
		{"sgr ignored", "\x1b[1;38;2;10;20;30ma\x1b[0m\x1b[38:5:3mb", "ab|||", 2, 0},
		{"charset designation skipped", "\x1b(Bab\x1b)0c", "abc|||", 3, 0},
		{"private csi ignored", "\x1b[>4;1m\x1b[?u\x1b[?2004hx", "x|||", 1, 0},
		{"wide chars", "你好a", "你好a|||", 5, 0},
		{"wide at last column wraps", "abcdefg你", "abcdefg|你||", 2, 1},
		{"overwrite half a wide char", "你好\x1b[2Gx", " x好|||", 2, 0},
		{"combining dropped", "e\u0301x", "ex|||", 2, 0},
		{"rep", "ab\x1b[3b", "abbbb|||", 5, 0},
		{"reset", "abc\x1b[2;3r\x1bcd", "d|||", 1, 0},
		{"cancel aborts csi", "\x1b[3\x18x", "x|||", 1, 0},
		{"invalid utf8 skipped", "a\xffb", "ab|||", 2, 0},
		{"emoji wide", "\U0001F600x", "\U0001F600x|||", 3, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			term := New(8, 4, nil)
			_, _ = term.Write([]byte(c.in))
			if got := screen(t, term); got != c.want {
				t.Fatalf("screen %q, want %q", got, c.want)
			}
			if x, y := term.Cursor(); x != c.cx || y != c.cy {
				t.Fatalf("cursor %d,%d, want %d,%d", x, y, c.cx, c.cy)
			}
			// Byte by byte must give the same screen: sequences and UTF-8
			// split across writes are held over.
			split := New(8, 4, nil)
			for i := range len(c.in) {
				_, _ = split.Write([]byte{c.in[i]})
			}
			if got := screen(t, split); got != c.want {
				t.Fatalf("byte-by-byte screen %q, want %q", got, c.want)
			}
		})
	}
}

func TestAltScreen(t *testing.T) {
	term := New(10, 3, nil)
	_, _ = term.Write([]byte("main\r\nline2"))
	_, _ = term.Write([]byte("\x1b[?1049h\x1b[Halt"))
	if got := screen(t, term); got != "alt||" || !term.AltScreen() {
		t.Fatalf("alt screen %q (alt=%v)", got, term.AltScreen())
	}
	_, _ = term.Write([]byte("\x1b[?1049l"))
	if got := screen(t, term); got != "main|line2|" || term.AltScreen() {
		t.Fatalf("main screen after alt %q", got)
	}
	if x, y := term.Cursor(); x != 5 || y != 1 {
		t.Fatalf("cursor not restored: %d,%d", x, y)
	}
	_, _ = term.Write([]byte("\x1b[?1049h"))
	if got := screen(t, term); got != "||" {
		t.Fatalf("alt screen not cleared on entry: %q", got)
	}
}

func TestQueriesAreAnswered(t *testing.T) {
	var replies bytes.Buffer
	term := New(20, 10, func(b []byte) { replies.Write(b) })
	in := "\x1b[5;10H\x1b[6n\x1b[c\x1b[0c\x1b[>c\x1b[5n\x1b[?6n\x1b[?1049$p\x1b[?2026$p\x1b[4$p\x1b[?u\x1b]11;?\x07"
	_, _ = term.Write([]byte(in))
	want := "\x1b[5;10R\x1b[?62;1;6;22c\x1b[?62;1;6;22c\x1b[>1;10;0c\x1b[0n\x1b[?5;10R\x1b[?1049;2$y\x1b[?2026;0$y\x1b[4;2$y"
	if got := replies.String(); got != want {
		t.Fatalf("replies %q, want %q", got, want)
	}
	// A cursor report reflects the output before the query, not after.
	replies.Reset()
	_, _ = term.Write([]byte("\x1b[2;3H\x1b[6n\x1b[9;9H"))
	if got := replies.String(); got != "\x1b[2;3R" {
		t.Fatalf("reply %q", got)
	}
}

func TestResize(t *testing.T) {
	term := New(10, 4, nil)
	_, _ = term.Write([]byte("1\r\n2\r\n3\r\n4你好"))
	term.Resize(4, 2)
	if got := screen(t, term); got != "3|4你" {
		t.Fatalf("shrunk %q", got)
	}
	if x, y := term.Cursor(); x != 3 || y != 1 {
		t.Fatalf("cursor %d,%d", x, y)
	}
	term.Resize(6, 3)
	if got := screen(t, term); got != "3|4你|" {
		t.Fatalf("grown %q", got)
	}
	_, _ = term.Write([]byte("\r\n\r\nabcdefg"))
	if got := screen(t, term); got != "|abcdef|g" {
		t.Fatalf("after resize %q", got)
	}
	if c, r := term.Size(); c != 6 || r != 3 {
		t.Fatalf("size %dx%d", c, r)
	}
}

func TestScrollingManyLinesKeepsTheLast(t *testing.T) {
	term := New(20, 5, nil)
	var b strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&b, "line %d\r\n", i)
	}
	_, _ = term.Write([]byte(b.String()))
	if got := screen(t, term); got != "line 9996|line 9997|line 9998|line 9999|" {
		t.Fatalf("screen %q", got)
	}
}

func BenchmarkWrite(b *testing.B) {
	var frame bytes.Buffer
	frame.WriteString("\x1b[H\x1b[2J")
	for r := 1; r <= 40; r++ {
		fmt.Fprintf(&frame, "\x1b[%d;1H\x1b[38;5;%dm%s\x1b[0m", r, r, strings.Repeat("x", 110))
	}
	scroll := bytes.Repeat([]byte(strings.Repeat("the quick brown fox jumps over the lazy dog ", 2)+"\r\n"), 400)
	wide := bytes.Repeat([]byte(strings.Repeat("界", 50)+"\r\n"), 100)
	for _, c := range []struct {
		name string
		data []byte
	}{{"positioned-frame", frame.Bytes()}, {"scrolling-lines", scroll}, {"wide-lines", wide}} {
		b.Run(c.name, func(b *testing.B) {
			term := New(120, 40, nil)
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				_, _ = term.Write(c.data)
			}
		})
	}
}

// FuzzWrite feeds arbitrary output at small sizes: the emulator must never
// panic, keep its size and keep the cursor on the screen.
func FuzzWrite(f *testing.F) {
	for _, s := range []string{
		"hello\r\nworld", "\x1b[2;3r\x1b[5L\x1b[9M\x1bM\x1bD", "\x1b[?1049h\x1b[99;99H你\x1b[3@\x1b[4P",
		"\x1b[4h界界\x1b[b\x1b[65535b", "\x1b[?6h\x1b[3;2r\x1b[H\x1b[99A\x1b[99B", "\x1b]0;t\x1b\\\x1bP\x1b[c\xe4\xb8",
		"\x1b[0;0;0;0;0;0;0;0;0;0;0;0;0;0;0;0;0;0;0;0m", "\t\t\t\b\b\x1b[3Z\x1b[5I", "\x1b7\x1b[?1049l\x1b8\x1bc",
	} {
		f.Add([]byte(s), uint8(8), uint8(4))
	}
	f.Fuzz(func(t *testing.T, data []byte, cols, rows uint8) {
		c, r := int(cols%12)+1, int(rows%6)+1
		term := New(c, r, func([]byte) {})
		half := len(data) / 2
		_, _ = term.Write(data[:half])
		term.Resize(r+1, c) // swapped on purpose: shapes change
		_, _ = term.Write(data[half:])
		s := term.Render()
		if s.Cols != r+1 || s.Rows != c || len(s.Lines) != c {
			t.Fatalf("screen %dx%d with %d lines, want %dx%d", s.Cols, s.Rows, len(s.Lines), r+1, c)
		}
		if s.CursorX < 0 || s.CursorX >= s.Cols || s.CursorY < 0 || s.CursorY >= s.Rows {
			t.Fatalf("cursor %d,%d off a %dx%d screen", s.CursorX, s.CursorY, s.Cols, s.Rows)
		}
	})
}

// sameState fails unless a and b show the same screen and would react the
// same to further output.
func sameState(t *testing.T, a, b *Terminal) {
	t.Helper()
	sa, sb := a.Render(), b.Render()
	if fmt.Sprint(sa) != fmt.Sprint(sb) {
		t.Fatalf("screens differ:\nskipping   %q cursor %d,%d\nexhaustive %q cursor %d,%d",
			sa.Lines, sa.CursorX, sa.CursorY, sb.Lines, sb.CursorX, sb.CursorY)
	}
	if a.wrapNext != b.wrapNext || a.last != b.last || a.state != b.state || a.x != b.x || a.y != b.y {
		t.Fatalf("state differs: wrapNext %v/%v last %q/%q state %v/%v cursor %d,%d/%d,%d",
			a.wrapNext, b.wrapNext, a.last, b.last, a.state, b.state, a.x, a.y, b.x, b.y)
	}
}

// burst makes n bytes of plain scrolling output from seed: CRLF lines of
// varied length (some longer than the screen is wide), a bare LF or CR now
// and then.
func burst(seed uint64, n int) []byte {
	var b bytes.Buffer
	x := seed | 1
	next := func(m uint64) uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x % m }
	for b.Len() < n {
		for range next(140) {
			b.WriteByte(byte(0x20 + next(0x5f)))
		}
		switch next(20) {
		case 0:
			b.WriteByte('\n')
		case 1:
			b.WriteByte('\r')
		default:
			b.WriteString("\r\n")
		}
	}
	return b.Bytes()
}

// TestSkipScrolledOutMatchesExhaustive drives a skipping and an exhaustive
// terminal through the same states and bursts: every screen, cursor and
// pending state must agree, including when the burst is not plain, a
// scrolling region or insert mode is set, or a sequence is split across
// writes.
func TestSkipScrolledOutMatchesExhaustive(t *testing.T) {
	preludes := []string{
		"", "hello", "\x1b[5;7Hx", "abcdefghijklmnopqrstuvwxyz0123456789", "\x1b[?7l", "\x1b[3;10r", "\x1b[4h",
		"\x1b[?1049h\x1b[10;3H", "\x1b[1;31m", "\x1b[", "\x1b]0;title", "\xe4\xb8", "\x1b[3;10r\x1b[r",
		// A full screen, the cursor at its top, the bottom or in between:
		// what is left of old rows must scroll off however far down the
		// cursor starts.
		strings.Repeat("\r\n"+strings.Repeat("O", 40), 12) + "\x1b[1;1H",
		strings.Repeat("\r\n"+strings.Repeat("O", 40), 12) + "\x1b[7;1H",
		strings.Repeat("\r\n"+strings.Repeat("O", 40), 12),
	}
	tails := []string{"", "\x1b[bX", "\x1b[2J", "界\r\nend", "\x1b[H\x1b[K"}
	skipped := 0
	defer func() {
		if skipped == 0 {
			t.Error("no burst was skipped: the comparison compared nothing")
		}
	}()
	for pi, pre := range preludes {
		for seed := uint64(1); seed <= 6; seed++ {
			for _, size := range []int{skipMin - 1, skipMin + 100, 3 * skipMin, 64 << 10} {
				for ti, tail := range tails {
					name := fmt.Sprintf("prelude%d/seed%d/size%d/tail%d", pi, seed, size, ti)
					data := burst(seed, size)
					if seed == 6 {
						data[len(data)/2] = 0x1b // not plain past the middle
					}
					fast, slow := New(40, 12, nil), New(40, 12, nil)
					slow.exhaustive = true
					for _, term := range []*Terminal{fast, slow} {
						_, _ = term.Write([]byte(pre))
						_, _ = term.Write(data)
						_, _ = term.Write([]byte(tail))
					}
					skipped += fast.skipped
					t.Run(name, func(t *testing.T) { sameState(t, fast, slow) })
				}
			}
		}
	}
}

// TestSkipScrolledOutBound: short lines over a full screen, the cursor on
// each row in turn, and exactly as many line feeds as a skip needs: every row
// holds old text beyond the new lines' ends, so skipping with one line feed
// less would leave some of it on the screen.
func TestSkipScrolledOutBound(t *testing.T) {
	const cols, rows = 10, 3
	full := strings.Repeat("\r\n"+strings.Repeat("O", cols), rows)
	skipped := 0
	for y := range rows {
		// Skippable from the first CRLF, with the fewest feeds after it:
		// (rows-1-y) to reach the bottom and rows to scroll.
		var data bytes.Buffer
		for data.Len() < skipMin {
			data.WriteString("abcdefgh\r\n")
		}
		for i := range (rows - 1 - y) + rows {
			fmt.Fprintf(&data, "%d\r\n", i)
		}
		data.WriteString("end")
		fast, slow := New(cols, rows, nil), New(cols, rows, nil)
		slow.exhaustive = true
		for _, term := range []*Terminal{fast, slow} {
			_, _ = term.Write([]byte(full + fmt.Sprintf("\x1b[%d;1H", y+1)))
			_, _ = term.Write(data.Bytes())
		}
		skipped += fast.skipped
		t.Run(fmt.Sprintf("row%d", y), func(t *testing.T) { sameState(t, fast, slow) })
	}
	if skipped == 0 {
		t.Error("nothing was skipped: the comparison compared nothing")
	}
}

// FuzzSkipScrolledOut: whatever came before, a burst built from the input
// leaves the skipping and the exhaustive terminal in the same state.
func FuzzSkipScrolledOut(f *testing.F) {
	f.Add([]byte("\x1b[5;7Hx"), []byte("line\r\n"), uint8(12))
	f.Add([]byte("\x1b[?7l"), []byte("a long line that wraps around the screen\r\n\n\r"), uint8(3))
	f.Add([]byte("\x1b[2;4r"), []byte("x\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, prelude, unit []byte, rows uint8) {
		if len(unit) == 0 {
			return
		}
		r := int(rows%20) + 1
		data := bytes.Repeat(unit, skipMin/len(unit)+2*r+1)
		fast, slow := New(30, r, nil), New(30, r, nil)
		slow.exhaustive = true
		for _, term := range []*Terminal{fast, slow} {
			_, _ = term.Write(prelude)
			_, _ = term.Write(data)
		}
		sameState(t, fast, slow)
	})
}
