package match

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"aicli.dev/aicli/apis/v1alpha1"
)

func trigger(caseSensitive bool, kws ...v1alpha1.Keyword) v1alpha1.TriggerSpec {
	return v1alpha1.TriggerSpec{Keywords: kws, CaseSensitive: caseSensitive}
}

func sub(text string) v1alpha1.Keyword {
	return v1alpha1.Keyword{Text: text, Mode: v1alpha1.MatchSubstring}
}

func word(text string) v1alpha1.Keyword {
	return v1alpha1.Keyword{Text: text, Mode: v1alpha1.MatchWord}
}

func mustCompile(t *testing.T, tr v1alpha1.TriggerSpec) *Matcher {
	t.Helper()
	m, err := Compile(tr)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return m
}

// spans renders hits as "keyword@start:end=matched text".
func spans(text string, hits []Hit) []string {
	out := []string{}
	for _, h := range hits {
		out = append(out, h.Keyword+"@"+strconv.Itoa(h.Start)+":"+strconv.Itoa(h.End)+"="+text[h.Start:h.End])
	}
	return out
}

func TestWordAndSubstring(t *testing.T) {
	for _, tc := range []struct {
		text            string
		word, substring bool
	}{
		{"kernel panic: oops", true, true},
		{"panic", true, true},
		{"(panic)", true, true},
		{"PANIC!", true, true},
		{"panic_handler", true, true}, // "_" is not alphanumeric
		{"a-panic-b", true, true},
		{"panicked", false, true},
		{"antipanic", false, true},
		{"panic2", false, true}, // a digit is alphanumeric
		{"épanic", false, true}, // so is a non-ASCII letter
		{"panicé", false, true}, //
		{"١panic", false, true}, // and a non-ASCII digit
		{"→panic←", true, true}, // a symbol is not
		{"\xffpanic\xfe", true, true},
		{"pani c", false, false},
	} {
		w := mustCompile(t, trigger(false, word("panic")))
		s := mustCompile(t, trigger(false, sub("panic")))
		if got := len(w.Match(tc.text)) == 1; got != tc.word {
			t.Errorf("Word %q: fired=%v, want %v", tc.text, got, tc.word)
		}
		if got := len(s.Match(tc.text)) == 1; got != tc.substring {
			t.Errorf("Substring %q: fired=%v, want %v", tc.text, got, tc.substring)
		}
	}
}

func TestWordRuleLooksOutsideTheKeyword(t *testing.T) {
	m := mustCompile(t, trigger(false, word("panic:"), word("-x-")))
	for text, want := range map[string]int{
		"panic: now": 1,
		"panic:x":    0,
		"a -x- b":    1,
		"a-x-b":      0,
		"panic:":     1,
	} {
		if got := len(m.Match(text)); got != want {
			t.Errorf("%q: %d hits, want %d", text, got, want)
		}
	}
}

func TestCaseFlag(t *testing.T) {
	text := "Deadlock detected; DEADLOCK again; deadlock"
	insensitive := mustCompile(t, trigger(false, sub("DeadLock")))
	if got := spans(text, insensitive.Match(text)); !slices.Equal(got, []string{
		"DeadLock@0:8=Deadlock", "DeadLock@19:27=DEADLOCK", "DeadLock@35:43=deadlock",
	}) {
		t.Errorf("case-insensitive: %v", got)
	}
	sensitive := mustCompile(t, trigger(true, sub("DEADLOCK"), sub("deadlock")))
	if got := spans(text, sensitive.Match(text)); !slices.Equal(got, []string{
		"DEADLOCK@19:27=DEADLOCK", "deadlock@35:43=deadlock",
	}) {
		t.Errorf("case-sensitive: %v", got)
	}
}

func TestOverlappingKeywords(t *testing.T) {
	m := mustCompile(t, trigger(false, sub("deadlock"), sub("dead"), sub("lock"), word("ad")))
	text := "a deadlock; dead ad"
	// Sorted by Start then End: dead (2:6) precedes deadlock (2:10); "ad"
	// inside "dead" is not a word.
	want := []string{
		"dead@2:6=dead", "deadlock@2:10=deadlock", "lock@6:10=lock",
		"dead@12:16=dead", "ad@17:19=ad",
	}
	if got := spans(text, m.Match(text)); !slices.Equal(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	// Repeated and self-overlapping occurrences.
	m = mustCompile(t, trigger(false, sub("aa")))
	if got := spans("aaaa", m.Match("aaaa")); !slices.Equal(got, []string{"aa@0:2=aa", "aa@1:3=aa", "aa@2:4=aa"}) {
		t.Errorf("aa in aaaa: %v", got)
	}
}

func TestSameTextTwoModesReportsOnce(t *testing.T) {
	m := mustCompile(t, trigger(false, word("Panic"), sub("panic")))
	if got := spans("panic panicked", m.Match("panic panicked")); !slices.Equal(got, []string{
		"panic@0:5=panic", "panic@6:11=panic",
	}) {
		t.Errorf("got %v", got)
	}
	m = mustCompile(t, trigger(true, word("Panic"), sub("panic")))
	if got := spans("Panic Panicked panic", m.Match("Panic Panicked panic")); !slices.Equal(got, []string{
		"Panic@0:5=Panic", "panic@15:20=panic",
	}) {
		t.Errorf("case-sensitive got %v", got)
	}
}

func TestUnicodeOffsetsAreIntoTheOriginal(t *testing.T) {
	// İ (2 bytes) lowers to i (1 byte), ẞ (3 bytes) to ß (2 bytes), the
	// Kelvin sign K (3 bytes) to k (1 byte): the folded copy is shorter, the
	// hits still index the original.
	text := "\u0130STANBUL \u1E9Etra\u00DFe \u212AELVIN Kelvin \u0131i STRA\u1E9EE"
	m := mustCompile(t, trigger(false, sub("istanbul"), sub("ßtraße"), word("kelvin"), word("straße"), sub("i")))
	got := spans(text, m.Match(text))
	want := []string{
		"i@0:2=İ", // İ lowers to i
		"istanbul@0:9=İSTANBUL",
		"ßtraße@10:19=ẞtraße",
		"kelvin@20:28=\u212AELVIN",
		"i@26:27=I",
		"kelvin@29:35=Kelvin",
		"i@33:34=i",
		"i@38:39=i", // ı (dotless, U+0131) is not i
		"straße@40:48=STRAẞE",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	// The same keywords, case-sensitive: only exact bytes.
	m = mustCompile(t, trigger(true, sub("ßtraße"), sub("İ")))
	if got := spans(text, m.Match(text)); !slices.Equal(got, []string{"İ@0:2=İ"}) {
		t.Errorf("case-sensitive: %v", got)
	}
	// A non-ASCII keyword upper-cased in the text.
	m = mustCompile(t, trigger(false, word("éclair")))
	if got := spans("ÉCLAIR, éclairs", m.Match("ÉCLAIR, éclairs")); !slices.Equal(got, []string{"éclair@0:7=ÉCLAIR"}) {
		t.Errorf("éclair: %v", got)
	}
}

func TestMatchNothing(t *testing.T) {
	m := mustCompile(t, trigger(false, sub("panic")))
	if hits := m.Match(""); hits != nil {
		t.Errorf("empty text: %v", hits)
	}
	if hits := m.Match("all is well"); hits != nil {
		t.Errorf("no hit: %v", hits)
	}
}

func TestSpeakers(t *testing.T) {
	all := mustCompile(t, trigger(false, sub("x")))
	for _, s := range []string{"human", "agent", "tool", "injected:doc", "mail:a", ""} {
		if !all.Speaks(s) {
			t.Errorf("no speaker filter: Speaks(%q) = false", s)
		}
	}
	tr := trigger(false, sub("x"))
	tr.Speakers = []string{"human", "mail:planner", "injected:*"}
	m := mustCompile(t, tr)
	for s, want := range map[string]bool{
		"human":         true,
		"mail:planner":  true,
		"injected:*":    true, // a name, not a pattern
		"injected:doc":  false,
		"mail:builder":  false,
		"mail:*":        false,
		"agent":         false,
		"tool":          false,
		"Human":         false,
		"mail:planner ": false,
	} {
		if got := m.Speaks(s); got != want {
			t.Errorf("Speaks(%q) = %v, want %v", s, got, want)
		}
	}
	// The matcher keeps its own copy.
	tr.Speakers[0] = "agent"
	if !m.Speaks("human") || m.Speaks("agent") {
		t.Error("Speakers changed after Compile")
	}
}

func TestCompileNamesTheField(t *testing.T) {
	_, err := Compile(trigger(false, sub("a"), sub("b"), sub("")))
	if err == nil || err.Error() != "spec.trigger.keywords[2].text: Required value: empty" {
		t.Fatalf("Compile error = %v", err)
	}
}

func TestExcerpt(t *testing.T) {
	text := "0123456789panic0123456789"
	h := Hit{Keyword: "panic", Start: 10, End: 15}
	for _, tc := range []struct {
		radius int
		want   string
	}{
		{3, "…789panic012…"},
		{0, "…panic…"},
		{-1, "…panic…"},
		{10, "0123456789panic0123456789"},
		{100, "0123456789panic0123456789"},
	} {
		if got := Excerpt(text, h, tc.radius); got != tc.want {
			t.Errorf("radius %d: %q, want %q", tc.radius, got, tc.want)
		}
	}
	// Cuts move inwards to rune boundaries: "é" is 2 bytes, "€" 3.
	text = "éé€panic€éé"
	h = Hit{Start: 7, End: 12}
	if text[h.Start:h.End] != "panic" {
		t.Fatal("bad fixture")
	}
	for radius, want := range map[int]string{
		1: "…panic…",
		2: "…panic…",
		3: "…€panic€…",
		4: "…€panic€…",
		5: "…é€panic€é…",
		7: "éé€panic€éé",
	} {
		if got := Excerpt(text, h, radius); got != want {
			t.Errorf("radius %d: %q, want %q", radius, got, want)
		}
	}
	// A hit past the end is clamped.
	if got := Excerpt("abc", Hit{Start: 5, End: 9}, 1); got != "…c" {
		t.Errorf("clamped: %q", got)
	}
}

func TestMatchConcurrently(t *testing.T) {
	m := mustCompile(t, trigger(false, sub("panic"), word("ẞ")))
	texts := []string{"PANIC ẞ", "İİİ panic", strings.Repeat("x", 1000) + "Panic"}
	want := make([][]Hit, len(texts))
	for i, s := range texts {
		want[i] = m.Match(s)
	}
	done := make(chan error)
	for g := range 4 {
		go func() {
			var err error
			for i := range 200 {
				k := (g + i) % len(texts)
				if got := m.Match(texts[k]); !slices.Equal(got, want[k]) {
					err = fmt.Errorf("%q: %v, want %v", texts[k], got, want[k])
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
