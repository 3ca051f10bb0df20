package store

import (
	"encoding/json"
	"strings"
	"testing"
)

var jsonStringSeeds = []string{
	"", "a", "plain ascii text that is longer than eight bytes",
	`quote" at 6`, `0123456"`, `01234567"`, `012345678\`, "tab\tnew\nline\r",
	"\x00\x01\x1f\x7f", "\b\f", "héllo wörld ☃ 😀", "\u2028\u2029 separators",
	"bad \xff utf8 \xc3", "<html>&amp;</html>", strings.Repeat("x", 400),
	strings.Repeat("x", 63) + `"` + strings.Repeat("y", 9), strings.Repeat("ab", 20) + "\x1f",
}

// checkJSONString asserts appendJSONString produces valid JSON that decodes
// to what encoding/json's own encoding decodes to.
func checkJSONString(t *testing.T, s string) {
	t.Helper()
	got := appendJSONString([]byte("x"), s)[1:]
	var dec, want string
	if err := json.Unmarshal(got, &dec); err != nil {
		t.Fatalf("%q: encoded %s is not a JSON string: %v", s, got, err)
	}
	std, _ := json.Marshal(s)
	if err := json.Unmarshal(std, &want); err != nil {
		t.Fatal(err)
	}
	if dec != want {
		t.Fatalf("%q: encoded %s decodes to %q, want %q", s, got, dec, want)
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range jsonStringSeeds {
		checkJSONString(t, s)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringSeeds {
		f.Add(s)
	}
	f.Fuzz(checkJSONString)
}

func BenchmarkAppendJSONString400(b *testing.B) {
	s := strings.Repeat("x", 400)
	buf := make([]byte, 0, 512)
	b.SetBytes(int64(len(s)))
	for range b.N {
		buf = appendJSONString(buf[:0], s)
	}
}
