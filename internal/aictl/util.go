package aictl

import "strconv"

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
