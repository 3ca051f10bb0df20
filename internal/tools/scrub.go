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
	for _, v := range s.secrets {
		if bytes.Contains(buf, v) {
			buf = bytes.ReplaceAll(buf, v, []byte(Redacted))
		}
	}
	hold := s.holdback(buf)
	s.pending = append(s.pending[:0], buf[len(buf)-hold:]...)
	return buf[:len(buf)-hold]
}

// flush returns what is held back; it holds no whole secret.
func (s *scrubber) flush() []byte {
	out := s.pending
	s.pending = nil
	return out
}

// holdback is the length of the longest suffix of buf that is a proper prefix of a secret.
func (s *scrubber) holdback(buf []byte) int {
	best := 0
	for _, v := range s.secrets {
		for k := min(len(v)-1, len(buf)); k > best; k-- {
			if bytes.Equal(buf[len(buf)-k:], v[:k]) {
				best = k
				break
			}
		}
	}
	return best
}
