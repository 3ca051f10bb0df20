package vtscreen

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"

	"aicli.dev/aicli/guest/ptyapi"
)

// wideTail marks the cell covered by the right half of a wide character.
const wideTail rune = 0

// maxParams bounds the numeric parameters kept for one control sequence.
const maxParams = 16

type parseState uint8

const (
	stGround    parseState = iota
	stEsc                  // after ESC
	stEscSkip              // after ESC and an intermediate (charset designation etc.): one more byte
	stCSI                  // inside ESC [
	stString               // inside OSC, DCS, APC, PM or SOS: skipped
	stStringEsc            // ESC inside a string: ST or the start of a new sequence
)

type savedCursor struct {
	x, y   int
	origin bool
}

// Terminal is a VT screen. It is not safe for concurrent use.
type Terminal struct {
	cols, rows int
	lines      [][]rune // the active screen
	other      [][]rune // the inactive screen (main while alt is active, and vice versa)
	alt        bool
	x, y       int
	wrapNext   bool // a character was written in the last column: the next one wraps
	top, bot   int  // scrolling region, inclusive
	origin     bool
	autowrap   bool
	insert     bool
	saved      [2]savedCursor // DECSC slots for the main and the alternate screen
	tabs       []bool
	last       rune // last printed character, for REP
	reply      func([]byte)
	width      runewidth.Condition
	scratch    [][]rune

	state   parseState
	prefix  byte // private marker of the current CSI ('?', '>', '<', '=')
	inter   byte // last intermediate byte of the current CSI
	pbuf    [64]byte
	plen    int
	params  [maxParams]int
	nparams int
	utf     [utf8.UTFMax]byte // an incomplete UTF-8 sequence held over from the last Write
	nutf    int
	out     []byte // reply scratch

	// exhaustive turns skipScrolledOut off (tests compare both paths);
	// skipped counts the bytes it dropped.
	exhaustive bool
	skipped    int
}

// New returns a cols×rows terminal; reply receives the answers to terminal
// queries (it is called from Write and must not block or keep the slice).
// A nil reply discards them.
func New(cols, rows int, reply func([]byte)) *Terminal {
	if reply == nil {
		reply = func([]byte) {}
	}
	t := &Terminal{reply: reply, width: runewidth.Condition{StrictEmojiNeutral: true}}
	t.Resize(cols, rows)
	t.reset()
	return t
}

func newScreen(cols, rows int) [][]rune {
	cells := make([]rune, cols*rows)
	for i := range cells {
		cells[i] = ' '
	}
	s := make([][]rune, rows)
	for y := range s {
		s[y] = cells[y*cols : (y+1)*cols : (y+1)*cols]
	}
	return s
}

// Size returns the screen size.
func (t *Terminal) Size() (cols, rows int) { return t.cols, t.rows }

// Cursor returns the cursor position (0-based).
func (t *Terminal) Cursor() (x, y int) { return t.x, t.y }

// AltScreen reports whether the alternate screen is active.
func (t *Terminal) AltScreen() bool { return t.alt }

// Resize changes the screen size, keeping the text that still fits; when the
// screen gets shorter the lines above the cursor go first.
func (t *Terminal) Resize(cols, rows int) {
	if cols < 1 {
		cols = 1
	}
	if rows < 1 {
		rows = 1
	}
	if cols == t.cols && rows == t.rows {
		return
	}
	slide := 0
	if t.y >= rows {
		slide = t.y - rows + 1
	}
	t.lines = resized(t.lines, cols, rows, slide)
	t.other = resized(t.other, cols, rows, 0)
	t.cols, t.rows = cols, rows
	t.tabs = make([]bool, cols)
	for i := 8; i < cols; i += 8 {
		t.tabs[i] = true
	}
	t.top, t.bot = 0, rows-1
	t.x = min(t.x, cols-1)
	t.y = min(max(t.y-slide, 0), rows-1)
	t.wrapNext = false
	for i := range t.saved {
		t.saved[i].x = min(t.saved[i].x, cols-1)
		t.saved[i].y = min(t.saved[i].y, rows-1)
	}
}

func resized(old [][]rune, cols, rows, slide int) [][]rune {
	s := newScreen(cols, rows)
	for y := 0; y < rows && y+slide < len(old); y++ {
		src := old[y+slide]
		n := copy(s[y], src)
		if n > 0 && n < len(src) && s[y][n-1] != wideTail && src[n] == wideTail {
			s[y][n-1] = ' ' // a wide character cut in half
		}
	}
	return s
}

// reset is RIS: both screens cleared, cursor home, default modes.
func (t *Terminal) reset() {
	if t.alt {
		t.lines, t.other = t.other, t.lines
		t.alt = false
	}
	clearScreen(t.lines)
	clearScreen(t.other)
	t.x, t.y, t.wrapNext = 0, 0, false
	t.top, t.bot = 0, t.rows-1
	t.origin, t.autowrap, t.insert = false, true, false
	t.saved = [2]savedCursor{}
	for i := range t.tabs {
		t.tabs[i] = i > 0 && i%8 == 0
	}
	t.state = stGround
}

func clearScreen(s [][]rune) {
	for _, l := range s {
		fill(l)
	}
}

func fill(cells []rune) {
	for i := range cells {
		cells[i] = ' '
	}
}

// Render returns the screen as text lines (trailing blanks trimmed) and the cursor.
func (t *Terminal) Render() ptyapi.Screen {
	lines := make([]string, t.rows)
	var buf []byte
	for y, l := range t.lines {
		buf = buf[:0]
		for _, r := range l {
			if r == wideTail {
				continue
			}
			buf = utf8.AppendRune(buf, r)
		}
		end := len(buf)
		for end > 0 && buf[end-1] == ' ' {
			end--
		}
		lines[y] = string(buf[:end])
	}
	return ptyapi.Screen{Cols: t.cols, Rows: t.rows, Lines: lines, CursorX: t.x, CursorY: t.y}
}

// plainPrefix is the length of p's leading run of printable ASCII, CR and
// LF. It tests eight bytes at a time and looks at single bytes only in words
// holding a control or non-ASCII byte.
func plainPrefix(p []byte) int {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(p); i += 8 {
		x := binary.LittleEndian.Uint64(p[i:])
		below := (x - ones*0x20) &^ x & high         // a byte < 0x20
		above := ((x + ones*(0x7f-0x7e)) | x) & high // a byte > 0x7e
		if below|above == 0 {
			continue
		}
		for j := i; j < i+8; j++ {
			if !plainByte(p[j]) {
				return j
			}
		}
	}
	for ; i < len(p); i++ {
		if !plainByte(p[i]) {
			return i
		}
	}
	return i
}

func plainByte(b byte) bool { return b >= 0x20 && b < 0x7f || b == '\r' || b == '\n' }

// skipMin is the shortest stretch of output skipScrolledOut bothers to skip.
const skipMin = 4 << 10

// skipScrolledOut returns what of p has to be emulated for the same screen:
// a fast-scrolling burst is mostly lines that scroll off the top before
// anyone can see them (there is no scrollback). When p starts, in the ground
// state with the scrolling region the whole screen, with plain text
// (printable ASCII, CR, LF) and that plain stretch holds, after some CRLF,
// at least the line feeds that take the cursor from its row to the bottom
// plus rows more, everything up to that CRLF is dropped and a CR takes its
// place: the rows further line feeds scroll every earlier row off, and the
// last rows scrolls, on which the screen depends, happen on the same bytes
// either way, so the screen, the cursor and the wrap state end up as if
// every byte had been drawn. Lines start at column 0 either way and plain
// text changes no other state; the last printed character (for REP) is
// carried over.
func (t *Terminal) skipScrolledOut(p []byte) []byte {
	// (see plainPrefix for what counts as plain)
	if len(p) < skipMin || t.state != stGround || t.nutf > 0 || t.top != 0 || t.bot != t.rows-1 || t.insert {
		return p
	}
	plain := plainPrefix(p)
	if plain < skipMin {
		return p
	}
	// need counts the line feed of the CRLF itself, which is dropped.
	need := (t.rows - 1 - t.y) + t.rows + 1
	feeds, cut := 0, 0
	for i := plain - 1; i > 0; i-- {
		if p[i] != '\n' {
			continue
		}
		if feeds++; feeds >= need && p[i-1] == '\r' {
			cut = i + 1
			break
		}
	}
	if cut < skipMin {
		return p
	}
	for i := cut - 1; i >= 0; i-- {
		if p[i] >= 0x20 && p[i] < 0x7f {
			t.last = rune(p[i])
			break
		}
	}
	t.control('\r')
	t.skipped += cut
	return p[cut:]
}

// Write feeds terminal output. It never fails; malformed input is skipped.
func (t *Terminal) Write(p []byte) (int, error) {
	n := len(p)
	if t.nutf > 0 {
		p = t.completeRune(p)
	}
	if !t.exhaustive {
		p = t.skipScrolledOut(p)
	}
	for i := 0; i < len(p); {
		switch t.state {
		case stGround:
			j := i
			for j < len(p) && p[j] >= 0x20 && p[j] < 0x7f {
				j++
			}
			if j > i {
				t.printASCII(p[i:j])
				i = j
				continue
			}
			b := p[i]
			if b < 0x20 || b == 0x7f {
				t.control(b)
				i++
				continue
			}
			if !utf8.FullRune(p[i:]) {
				t.nutf = copy(t.utf[:], p[i:])
				return n, nil
			}
			r, sz := utf8.DecodeRune(p[i:])
			i += sz
			if r != utf8.RuneError || sz > 1 {
				t.print(r)
			}
		case stEsc:
			t.escape(p[i])
			i++
		case stEscSkip:
			if p[i] < 0x20 {
				t.control(p[i])
			} else {
				t.state = stGround
			}
			i++
		case stCSI:
			t.csiByte(p[i])
			i++
		case stString:
			for i < len(p) && t.state == stString {
				switch p[i] {
				case 0x07, 0x18, 0x1a:
					t.state = stGround
				case 0x1b:
					t.state = stStringEsc
				}
				i++
			}
		case stStringEsc:
			if p[i] == '\\' {
				t.state = stGround
				i++
			} else {
				t.state = stEsc // the string ended unterminated: this ESC starts a sequence
			}
		}
	}
	return n, nil
}

// completeRune finishes the UTF-8 sequence held over from the last Write and
// returns the rest of p.
func (t *Terminal) completeRune(p []byte) []byte {
	for len(p) > 0 && !utf8.FullRune(t.utf[:t.nutf]) {
		if p[0] < 0x80 || p[0] >= 0xc0 { // not a continuation byte: the sequence is broken
			t.nutf = 0
			return p
		}
		t.utf[t.nutf] = p[0]
		t.nutf++
		p = p[1:]
	}
	if !utf8.FullRune(t.utf[:t.nutf]) {
		return p
	}
	r, _ := utf8.DecodeRune(t.utf[:t.nutf])
	t.nutf = 0
	if r != utf8.RuneError {
		t.print(r)
	}
	return p
}

// control executes a C0 control character.
func (t *Terminal) control(b byte) {
	switch b {
	case 0x08: // BS
		if t.x > 0 {
			t.x--
		}
		t.wrapNext = false
	case 0x09: // HT
		x := t.x + 1
		for x < t.cols-1 && !t.tabs[x] {
			x++
		}
		t.x = min(x, t.cols-1)
		t.wrapNext = false
	case 0x0a, 0x0b, 0x0c: // LF, VT, FF
		t.index()
	case 0x0d: // CR
		t.x = 0
		t.wrapNext = false
	case 0x18, 0x1a: // CAN, SUB
		t.state = stGround
	case 0x1b:
		t.state = stEsc
	}
}

// printASCII writes a run of printable ASCII characters.
func (t *Terminal) printASCII(run []byte) {
	if t.insert {
		for _, b := range run {
			t.print(rune(b))
		}
		return
	}
	t.last = rune(run[len(run)-1])
	for len(run) > 0 {
		if t.wrapNext {
			t.wrap()
		}
		line := t.lines[t.y]
		n := min(len(run), t.cols-t.x)
		if line[t.x] == wideTail && t.x > 0 {
			line[t.x-1] = ' '
		}
		cells := line[t.x : t.x+n]
		for k, b := range run[:n] {
			cells[k] = rune(b)
		}
		t.x += n
		run = run[n:]
		if t.x < t.cols {
			if line[t.x] == wideTail {
				line[t.x] = ' '
			}
			continue
		}
		t.x = t.cols - 1
		t.wrapNext = t.autowrap
	}
}

// wrap moves to the start of the next line after a write in the last column.
func (t *Terminal) wrap() {
	t.wrapNext = false
	t.x = 0
	t.index()
}

// print writes one character of any width.
func (t *Terminal) print(r rune) {
	w := t.width.RuneWidth(r)
	if w == 0 {
		return // combining marks and other zero-width characters are not kept
	}
	if w > 2 || w > t.cols {
		w = 1
	}
	t.last = r
	if t.wrapNext {
		t.wrap()
	}
	if w == 2 && t.x == t.cols-1 {
		if !t.autowrap {
			return
		}
		t.lines[t.y][t.x] = ' '
		t.wrap()
	}
	line := t.lines[t.y]
	if t.insert {
		copy(line[t.x+w:], line[t.x:t.cols-w])
	}
	if line[t.x] == wideTail && t.x > 0 {
		line[t.x-1] = ' '
	}
	line[t.x] = r
	if w == 2 {
		line[t.x+1] = wideTail
	}
	t.x += w
	if t.x < t.cols {
		if line[t.x] == wideTail {
			line[t.x] = ' '
		}
		return
	}
	t.x = t.cols - 1
	t.wrapNext = t.autowrap
}

// index moves down a line, scrolling at the bottom of the scrolling region.
func (t *Terminal) index() {
	t.wrapNext = false
	switch {
	case t.y == t.bot:
		t.scrollUp(t.top, 1)
	case t.y < t.rows-1:
		t.y++
	}
}

// reverseIndex moves up a line, scrolling at the top of the scrolling region.
func (t *Terminal) reverseIndex() {
	t.wrapNext = false
	switch {
	case t.y == t.top:
		t.scrollDown(t.top, 1)
	case t.y > 0:
		t.y--
	}
}

// scrollUp moves lines top+n..bot up by n and blanks the n lines at the
// bottom of the region. The lines rotate; no cell is copied.
func (t *Terminal) scrollUp(top, n int) {
	n = min(n, t.bot-top+1)
	if n <= 0 {
		return
	}
	t.scratch = append(t.scratch[:0], t.lines[top:top+n]...)
	copy(t.lines[top:], t.lines[top+n:t.bot+1])
	copy(t.lines[t.bot-n+1:], t.scratch)
	for _, l := range t.scratch {
		fill(l)
	}
}

// scrollDown moves lines top..bot-n down by n and blanks the n lines at top.
func (t *Terminal) scrollDown(top, n int) {
	n = min(n, t.bot-top+1)
	if n <= 0 {
		return
	}
	t.scratch = append(t.scratch[:0], t.lines[t.bot-n+1:t.bot+1]...)
	copy(t.lines[top+n:], t.lines[top:t.bot-n+1])
	copy(t.lines[top:], t.scratch)
	for _, l := range t.scratch {
		fill(l)
	}
}

// escape handles the byte after ESC.
func (t *Terminal) escape(b byte) {
	t.state = stGround
	switch b {
	case '[':
		t.state = stCSI
		t.prefix, t.inter, t.plen = 0, 0, 0
	case ']', 'P', '_', '^', 'X':
		t.state = stString
	case '(', ')', '*', '+', '-', '.', '/', '#', '%', ' ':
		t.state = stEscSkip
	case '7':
		t.saveCursor()
	case '8':
		t.restoreCursor()
	case 'D':
		t.index()
	case 'E':
		t.x = 0
		t.index()
	case 'M':
		t.reverseIndex()
	case 'H':
		t.tabs[t.x] = true
	case 'c':
		t.reset()
	default:
		if b < 0x20 {
			t.control(b)
		}
	}
}

func (t *Terminal) saveCursor() {
	t.saved[t.screenIndex()] = savedCursor{x: t.x, y: t.y, origin: t.origin}
}

func (t *Terminal) restoreCursor() {
	s := t.saved[t.screenIndex()]
	t.x, t.y, t.origin, t.wrapNext = min(s.x, t.cols-1), min(s.y, t.rows-1), s.origin, false
}

func (t *Terminal) screenIndex() int {
	if t.alt {
		return 1
	}
	return 0
}

// csiByte collects one byte of a control sequence and runs it at its final byte.
func (t *Terminal) csiByte(b byte) {
	switch {
	case b >= 0x40 && b <= 0x7e:
		t.state = stGround
		t.parseParams()
		t.csi(b)
	case b >= 0x30 && b <= 0x3f:
		if b >= 0x3c && t.plen == 0 && t.prefix == 0 {
			t.prefix = b
			return
		}
		if t.plen < len(t.pbuf) {
			t.pbuf[t.plen] = b
			t.plen++
		}
	case b >= 0x20 && b <= 0x2f:
		t.inter = b
	case b < 0x20:
		t.control(b) // C0 inside a sequence is executed; ESC, CAN and SUB abort it
	}
}

func (t *Terminal) parseParams() {
	t.nparams = 0
	v, have := 0, false
	for _, c := range t.pbuf[:t.plen] {
		if c == ';' || c == ':' {
			t.pushParam(v)
			v, have = 0, true
			continue
		}
		if c >= '0' && c <= '9' && v < 1<<20 {
			v = v*10 + int(c-'0')
			have = true
		}
	}
	if have {
		t.pushParam(v)
	}
}

func (t *Terminal) pushParam(v int) {
	if t.nparams < maxParams {
		t.params[t.nparams] = v
		t.nparams++
	}
}

// arg returns parameter i, or def when it is missing or zero.
func (t *Terminal) arg(i, def int) int {
	if i >= t.nparams || t.params[i] == 0 {
		return def
	}
	return t.params[i]
}

// csi runs a complete control sequence with final byte f.
func (t *Terminal) csi(f byte) {
	if t.inter != 0 {
		if t.inter == '$' && f == 'p' {
			t.reportMode()
		}
		return
	}
	switch t.prefix {
	case 0:
	case '?':
		switch f {
		case 'h', 'l':
			t.setPrivateModes(f == 'h')
		case 'n':
			if t.arg(0, 0) == 6 {
				t.replyf("\x1b[?", t.y+1, ';', t.x+1, 'R')
			}
		}
		return
	case '>':
		if f == 'c' && t.arg(0, 0) == 0 {
			t.reply([]byte("\x1b[>1;10;0c"))
		}
		return
	default:
		return
	}
	switch f {
	case '@': // ICH
		n := min(t.arg(0, 1), t.cols-t.x)
		line := t.lines[t.y]
		copy(line[t.x+n:], line[t.x:t.cols-n])
		fill(line[t.x : t.x+n])
	case 'A': // CUU
		t.moveTo(t.x, t.y-t.arg(0, 1), true)
	case 'B', 'e': // CUD, VPR
		t.moveTo(t.x, t.y+t.arg(0, 1), true)
	case 'C', 'a': // CUF, HPR
		t.moveTo(t.x+t.arg(0, 1), t.y, false)
	case 'D': // CUB
		t.moveTo(t.x-t.arg(0, 1), t.y, false)
	case 'E': // CNL
		t.moveTo(0, t.y+t.arg(0, 1), true)
	case 'F': // CPL
		t.moveTo(0, t.y-t.arg(0, 1), true)
	case 'G', '`': // CHA, HPA
		t.moveTo(t.arg(0, 1)-1, t.y, false)
	case 'H', 'f': // CUP, HVP
		t.moveAbs(t.arg(1, 1)-1, t.arg(0, 1)-1)
	case 'd': // VPA
		t.moveAbs(t.x, t.arg(0, 1)-1)
	case 'I': // CHT
		for range t.arg(0, 1) {
			t.control(0x09)
		}
	case 'Z': // CBT
		for range t.arg(0, 1) {
			x := t.x - 1
			for x > 0 && !t.tabs[x] {
				x--
			}
			t.x = max(x, 0)
		}
		t.wrapNext = false
	case 'J': // ED
		t.eraseDisplay(t.arg(0, 0))
	case 'K': // EL
		t.eraseLine(t.arg(0, 0))
	case 'X': // ECH
		n := min(t.arg(0, 1), t.cols-t.x)
		t.clearCells(t.y, t.x, t.x+n)
	case 'P': // DCH
		n := min(t.arg(0, 1), t.cols-t.x)
		line := t.lines[t.y]
		copy(line[t.x:], line[t.x+n:])
		fill(line[t.cols-n:])
		t.wrapNext = false
	case 'L': // IL
		if t.y >= t.top && t.y <= t.bot {
			t.scrollDown(t.y, t.arg(0, 1))
			t.x, t.wrapNext = 0, false
		}
	case 'M': // DL
		if t.y >= t.top && t.y <= t.bot {
			t.scrollUp(t.y, t.arg(0, 1))
			t.x, t.wrapNext = 0, false
		}
	case 'S': // SU
		t.scrollUp(t.top, t.arg(0, 1))
	case 'T': // SD
		if t.nparams <= 1 {
			t.scrollDown(t.top, t.arg(0, 1))
		}
	case 'b': // REP
		if t.last != 0 {
			for range min(t.arg(0, 1), t.cols*t.rows) {
				t.print(t.last)
			}
		}
	case 'r': // DECSTBM
		top, bot := t.arg(0, 1)-1, t.arg(1, t.rows)-1
		bot = min(bot, t.rows-1)
		if top < bot {
			t.top, t.bot = top, bot
			t.moveAbs(0, 0)
		}
	case 's': // SCOSC
		t.saveCursor()
	case 'u': // SCORC
		t.restoreCursor()
	case 'h', 'l': // SM, RM
		for _, m := range t.params[:t.nparams] {
			if m == 4 {
				t.insert = f == 'h'
			}
		}
	case 'n': // DSR
		switch t.arg(0, 0) {
		case 5:
			t.reply([]byte("\x1b[0n"))
		case 6:
			t.replyf("\x1b[", t.y+1, ';', t.x+1, 'R')
		}
	case 'c': // DA1
		if t.arg(0, 0) == 0 {
			t.reply([]byte("\x1b[?62;1;6;22c"))
		}
	}
}

// moveTo moves the cursor, clamped to the screen; vertical moves that start
// inside the scrolling region stay inside it.
func (t *Terminal) moveTo(x, y int, vertical bool) {
	lo, hi := 0, t.rows-1
	if vertical && t.y >= t.top && t.y <= t.bot {
		lo, hi = t.top, t.bot
	}
	t.x = min(max(x, 0), t.cols-1)
	t.y = min(max(y, lo), hi)
	t.wrapNext = false
}

// moveAbs positions the cursor, relative to the scrolling region in origin mode.
func (t *Terminal) moveAbs(x, y int) {
	lo, hi := 0, t.rows-1
	if t.origin {
		y += t.top
		lo, hi = t.top, t.bot
	}
	t.x = min(max(x, 0), t.cols-1)
	t.y = min(max(y, lo), hi)
	t.wrapNext = false
}

func (t *Terminal) clearCells(y, from, to int) {
	line := t.lines[y]
	if from > 0 && line[from] == wideTail {
		line[from-1] = ' '
	}
	if to < t.cols && line[to] == wideTail {
		line[to] = ' '
	}
	fill(line[from:to])
}

func (t *Terminal) eraseLine(mode int) {
	switch mode {
	case 0:
		t.clearCells(t.y, t.x, t.cols)
	case 1:
		t.clearCells(t.y, 0, t.x+1)
	case 2:
		t.clearCells(t.y, 0, t.cols)
	}
}

func (t *Terminal) eraseDisplay(mode int) {
	switch mode {
	case 0:
		t.clearCells(t.y, t.x, t.cols)
		for _, l := range t.lines[t.y+1:] {
			fill(l)
		}
	case 1:
		for _, l := range t.lines[:t.y] {
			fill(l)
		}
		t.clearCells(t.y, 0, t.x+1)
	case 2, 3:
		clearScreen(t.lines)
	}
}

// setPrivateModes handles DECSET/DECRST.
func (t *Terminal) setPrivateModes(set bool) {
	for _, m := range t.params[:t.nparams] {
		switch m {
		case 6: // DECOM
			t.origin = set
			t.moveAbs(0, 0)
		case 7: // DECAWM
			t.autowrap = set
			if !set {
				t.wrapNext = false
			}
		case 47, 1047:
			t.switchScreen(set, m == 1047)
		case 1048:
			if set {
				t.saveCursor()
			} else {
				t.restoreCursor()
			}
		case 1049:
			if set {
				t.saveCursor()
				t.switchScreen(true, true)
			} else {
				t.switchScreen(false, false)
				t.restoreCursor()
			}
		}
	}
}

// switchScreen enters or leaves the alternate screen; clear blanks the
// alternate screen on entry.
func (t *Terminal) switchScreen(alt, clear bool) {
	if alt == t.alt {
		return
	}
	t.lines, t.other = t.other, t.lines
	t.alt = alt
	if alt && clear {
		clearScreen(t.lines)
	}
	t.wrapNext = false
}

// reportMode answers DECRQM: modes it tracks as set (1) or reset (2), any
// other as not recognised (0).
func (t *Terminal) reportMode() {
	m := t.arg(0, 0)
	v := 0
	onOff := func(b bool) int {
		if b {
			return 1
		}
		return 2
	}
	if t.prefix == '?' {
		switch m {
		case 6:
			v = onOff(t.origin)
		case 7:
			v = onOff(t.autowrap)
		case 47, 1047, 1049:
			v = onOff(t.alt)
		}
		t.out = append(t.out[:0], "\x1b[?"...)
	} else {
		if m == 4 {
			v = onOff(t.insert)
		}
		t.out = append(t.out[:0], "\x1b["...)
	}
	t.out = strconv.AppendInt(t.out, int64(m), 10)
	t.out = append(t.out, ';')
	t.out = strconv.AppendInt(t.out, int64(v), 10)
	t.out = append(t.out, "$y"...)
	t.reply(t.out)
}

// replyf sends head a;b final.
func (t *Terminal) replyf(head string, a int, sep byte, b int, final byte) {
	t.out = append(t.out[:0], head...)
	t.out = strconv.AppendInt(t.out, int64(a), 10)
	t.out = append(t.out, sep)
	t.out = strconv.AppendInt(t.out, int64(b), 10)
	t.out = append(t.out, final)
	t.reply(t.out)
}
