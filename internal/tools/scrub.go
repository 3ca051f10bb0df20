package tools

import (
	"bytes"
	"slices"
)

// Redacted replaces every secret value in a call's output.
const Redacted = "[REDACTED]"

// minSecretLen is the shortest value scrubbed: shorter ones would redact ordinary output.
const minSecretLen = 4

// scrubber replaces secret values in one output stream, also when a value is split across writes: it holds back
// the longest tail that could still become a secret, and only that.
type scrubber struct {
	secrets [][]byte // longest first, so a value containing another is replaced whole
	pending []byte
}

func newScrubber(secrets map[string][]byte) *scrubber {
	s := &scrubber{}
	for _, v := range secrets {
		if len(v) >= minSecretLen && !slices.ContainsFunc(s.secrets, func(o []byte) bool { return bytes.Equal(o, v) }) {
			s.secrets = append(s.secrets, v)
		}
	}
	slices.SortFunc(s.secrets, func(a, b []byte) int { return len(b) - len(a) })
	return s
}

// push scrubs p and returns the bytes that may be sent now.
func (s *scrubber) push(p []byte) []byte {
	if len(s.secrets) == 0 {
		return p
	}
	buf := make([]byte, 0, len(s.pending)+len(p))
	buf = append(append(buf, s.pending...), p...)
	out, rest := s.scan(buf, false)
	s.pending = append(s.pending[:0], rest...)
	return out
}

// flush returns what is held back, scrubbed.
func (s *scrubber) flush() []byte {
	out, _ := s.scan(s.pending, true)
	s.pending = nil
	return out
}

// scan replaces every secret in buf, left to right and longest first, and — unless final — stops at the first
// position from which the rest could still grow into a secret, returning that rest unscrubbed.
func (s *scrubber) scan(buf []byte, final bool) (out, rest []byte) {
	out = make([]byte, 0, len(buf)+len(Redacted))
	i := 0
	for {
		j, n := s.next(buf, i)
		if !final {
			limit := len(buf)
			if j >= 0 {
				limit = j + 1
			}
			for k := max(i, len(buf)-s.maxLen()+1); k < limit; k++ {
				if s.couldGrow(buf[k:]) {
					return append(out, buf[i:k]...), buf[k:]
				}
			}
		}
		if j < 0 {
			return append(out, buf[i:]...), nil
		}
		out = append(append(out, buf[i:j]...), Redacted...)
		i = j + n
	}
}

// next finds the earliest secret at or after i (the longest at that position); j is -1 when there is none.
func (s *scrubber) next(buf []byte, i int) (j, n int) {
	j = -1
	for _, v := range s.secrets {
		if k := bytes.Index(buf[i:], v); k >= 0 && (j < 0 || i+k < j) {
			j, n = i+k, len(v)
		}
	}
	return j, n
}

// couldGrow reports whether t is a proper prefix of a secret.
func (s *scrubber) couldGrow(t []byte) bool {
	for _, v := range s.secrets {
		if len(v) > len(t) && bytes.HasPrefix(v, t) {
			return true
		}
	}
	return false
}

// maxLen is the longest secret's length.
func (s *scrubber) maxLen() int { return len(s.secrets[0]) }
