// Package connset tracks a server's open client connections so that shutting
// down closes every one of them, and none is accepted after that.
package connset

import (
	"net"
	"sync"
)

// Set is a set of open connections; the zero value is ready to use.
type Set struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// Track adds c; false once CloseAll has run (the caller then closes c).
func (s *Set) Track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	return true
}

// Untrack removes c and closes it.
func (s *Set) Untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	_ = c.Close()
}

// CloseAll closes every tracked connection and refuses later ones.
func (s *Set) CloseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
}
