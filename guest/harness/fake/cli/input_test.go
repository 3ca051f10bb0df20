package cli

import (
	"reflect"
	"testing"
)

func TestInputParser(t *testing.T) {
	cases := []struct {
		name   string
		chunks []string
		want   []event
	}{
		{"typing and enter", []string{"hi\r"}, []event{{kind: evText, text: "hi"}, {kind: evEnter}}},
		{"paste keeps newlines and CRs", []string{"\x1b[200~a\r\nb\x1b[201~\r"},
			[]event{{kind: evPaste, text: "a\r\nb"}, {kind: evEnter}}},
		{"paste split across reads", []string{"\x1b[200~abc\x1b[2", "01~"}, []event{{kind: evPaste, text: "abc"}}},
		{"cursor position report", []string{"\x1b[5;10R"}, []event{{kind: evCPR, row: 5, col: 10}}},
		{"device attributes", []string{"\x1b[?62;1;6;22c"}, []event{{kind: evDA, text: "?62;1;6;22c"}}},
		{"arrow keys ignored", []string{"\x1b[Ax"}, []event{{kind: evText, text: "x"}}},
		{"lone escape at end of read", []string{"\x1b"}, []event{{kind: evEscape}}},
		{"controls", []string{"\x03\x04\x7f"}, []event{{kind: evCtrlC}, {kind: evCtrlD}, {kind: evBackspace}}},
		{"utf-8 split across reads", []string{"\xe2\x9d", "\xaf"}, []event{{kind: evText, text: "❯"}}},
	}
	for _, c := range cases {
		var p inputParser
		var got []event
		for _, ch := range c.chunks {
			got = append(got, p.feed([]byte(ch), true)...)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v want %+v", c.name, got, c.want)
		}
	}
}
