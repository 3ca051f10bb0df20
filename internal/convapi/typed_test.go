package convapi

import (
	"slices"
	"testing"
)

func TestTypedLineFollowsLineEditing(t *testing.T) {
	for _, c := range []struct {
		name   string
		frames []string
		want   []string
	}{
		{"plain", []string{"h", "e", "l", "l", "o", "\r"}, []string{"hello"}},
		{"one frame, two lines", []string{"one\rtwo\n"}, []string{"one", "two"}},
		{"backspace", []string{"helx", "\x7f\x7f", "llo\r"}, []string{"hello"}},
		{"ctrl-h", []string{"ab\x08c\r"}, []string{"ac"}},
		{"ctrl-u clears to the start", []string{"wrong", "\x15", "right\r"}, []string{"right"}},
		{"ctrl-w deletes a word", []string{"deploy to prod", "\x17", "staging\r"}, []string{"deploy to staging"}},
		{"ctrl-c clears the prompt", []string{"never mind\x03", "go\r"}, []string{"go"}},
		{"arrows insert in the middle", []string{"helo", "\x1b[D", "l", "\x1b[C", "!\r"}, []string{"hello!"}},
		{"home, end, delete", []string{"xbc", "\x1b[H", "\x1b[3~", "a", "\x1b[F", "d\r"}, []string{"abcd"}},
		{"ss3 arrows", []string{"ac", "\x1bOD", "b\r"}, []string{"abc"}},
		{"ctrl-a, ctrl-e, ctrl-k", []string{"tail", "\x01", "head ", "\x05", "\x01\x06\x0b", "i\r"}, []string{"hi"}},
		{"bracketed paste keeps its newlines", []string{"see \x1b[200~line 1\r\nline 2\rline 3\x1b[201~", " end\r"},
			[]string{"see line 1\nline 2\nline 3 end"}},
		{"a paste split across frames", []string{"\x1b[20", "0~a\rb", "\x1b[2", "01~\r"}, []string{"a\nb"}},
		{"alt-enter inserts a newline", []string{"first", "\x1b\r", "second\r"}, []string{"first\nsecond"}},
		{"utf-8 split across frames", []string{"caf\xc3", "\xa9 \xe2\x9c", "\x93\r"}, []string{"café ✓"}},
		{"empty and blank lines are not announced", []string{"\r", "   \r"}, nil},
		{"history recall is not followed", []string{"\x1b[A", "\r", "x", "\x1b[A", "\r"}, nil},
		{"tab completion is not followed", []string{"/he\t\r"}, nil},
		{"escape on an empty prompt is harmless", []string{"\x1b", "ok\r"}, []string{"ok"}},
		{"escape on a typed line loses it", []string{"abc", "\x1b", "\r", "next\r"}, []string{"next"}},
		{"focus and cursor reports are no edit", []string{"a\x1b[I\x1b[O\x1b[12;5Rb\r"}, []string{"ab"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tl typedLine
			var got []string
			for _, f := range c.frames {
				got = append(got, tl.feed([]byte(f))...)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("lines %q, want %q", got, c.want)
			}
		})
	}
}
