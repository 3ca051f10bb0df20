package harness

import "testing"

func TestSanitizePaste(t *testing.T) {
	cases := map[string]string{
		"plain text":                              "plain text",
		"two\nlines\tand tab":                     "two\nlines\tand tab",
		"windows\r\nline":                         "windows\nline",
		"end\x1b[201~\rrm -rf ~\r":                "end\nrm -rf ~\n",
		"\x1b[200~nested":                         "nested",
		"bell\a esc\x1b[31m red del\x7f c1\u0085": "bell esc[31m red del c1",
		"unicode ❯ ✓ 日本":                          "unicode ❯ ✓ 日本",
	}
	for in, want := range cases {
		if got := SanitizePaste(in); got != want {
			t.Errorf("SanitizePaste(%q) = %q, want %q", in, got, want)
		}
	}
}
