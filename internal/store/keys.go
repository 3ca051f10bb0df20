package store

import (
	"encoding/binary"
	"fmt"
	"strings"
)

const (
	prefixEvent   = "e/"
	prefixObject  = "o/"
	prefixHistory = "h/"
	prefixKV      = "k/"
)

var (
	keyRV      = []byte("m/rv")
	keyCompact = []byte("m/compact")
	keyVersion = []byte("m/version")
)

// layoutVersion is written to m/version; Open refuses an unknown layout.
// Layout 1 wrote JSON history records and layout 2 one watch-log entry per
// event; this build reads both and marks such a store layout 3 (one
// watch-log entry per group, which older builds cannot read).
const layoutVersion = "3"

var olderLayouts = []string{"1", "2"}

func eventKey(seq uint64) []byte {
	k := make([]byte, len(prefixEvent)+8)
	copy(k, prefixEvent)
	binary.BigEndian.PutUint64(k[len(prefixEvent):], seq)
	return k
}

func historyPrefix(resource, ns, name string) []byte {
	return []byte(prefixHistory + resource + "/" + ns + "/" + name + "/")
}

// appendObjectKey appends o/<resource>/<ns>/<name> to dst.
func appendObjectKey(dst []byte, resource, ns, name string) []byte {
	dst = append(dst, prefixObject...)
	return appendAddress(dst, resource, ns, name)
}

// appendHistoryKey appends h/<resource>/<ns>/<name>/<seq BE8> to dst.
func appendHistoryKey(dst []byte, resource, ns, name string, seq uint64) []byte {
	dst = append(dst, prefixHistory...)
	dst = appendAddress(dst, resource, ns, name)
	dst = append(dst, '/')
	return binary.BigEndian.AppendUint64(dst, seq)
}

func appendAddress(dst []byte, resource, ns, name string) []byte {
	dst = append(dst, resource...)
	dst = append(dst, '/')
	dst = append(dst, ns...)
	dst = append(dst, '/')
	return append(dst, name...)
}

func kvKey(bucket, key string) []byte {
	return []byte(prefixKV + bucket + "/" + key)
}

func encodeUint64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func decodeUint64(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("store: want 8-byte integer, got %d bytes", len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// splitObjectKey parses o/<resource>/<ns>/<name>.
func splitObjectKey(k []byte) (resource, ns, name string, err error) {
	parts := strings.Split(strings.TrimPrefix(string(k), prefixObject), "/")
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("store: malformed object key %q", k)
	}
	return parts[0], parts[1], parts[2], nil
}

// splitHistoryKey parses h/<resource>/<ns>/<name>/<seq BE8>.
func splitHistoryKey(k []byte) (resource, ns, name string, seq uint64, err error) {
	if len(k) < len(prefixHistory)+9 || k[len(k)-9] != '/' {
		return "", "", "", 0, fmt.Errorf("store: malformed history key %q", k)
	}
	seq = binary.BigEndian.Uint64(k[len(k)-8:])
	parts := strings.Split(string(k[len(prefixHistory):len(k)-9]), "/")
	if len(parts) != 3 {
		return "", "", "", 0, fmt.Errorf("store: malformed history key %q", k)
	}
	return parts[0], parts[1], parts[2], seq, nil
}

// checkSegment rejects values that would make a key ambiguous.
func checkSegment(what, v string) error {
	if v == "" {
		return fmt.Errorf("%s is required", what)
	}
	if strings.ContainsAny(v, "/\x00") {
		return fmt.Errorf("%s %q must not contain '/' or NUL", what, v)
	}
	return nil
}
