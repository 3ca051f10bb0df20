package aictl

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// newerRV reports whether resourceVersion a is newer than b; versions are
// the store's event sequence numbers. An empty b is older than anything.
func newerRV(a, b string) bool {
	if b == "" {
		return a != ""
	}
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a > b
	}
	return x > y
}

// oneLine folds whitespace runs (newlines, tabs) into single spaces and
// cuts s to n runes (n <= 0: no cut).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
