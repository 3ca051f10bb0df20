package connset

import (
	"net"
	"testing"
)

func TestCloseAllClosesTrackedAndRefusesNew(t *testing.T) {
	var s Set
	a, b := net.Pipe()
	defer b.Close()
	if !s.Track(a) {
		t.Fatal("refused before CloseAll")
	}
	s.CloseAll()
	if _, err := a.Write([]byte("x")); err == nil {
		t.Fatal("a tracked connection is still open")
	}
	c, d := net.Pipe()
	defer c.Close()
	defer d.Close()
	if s.Track(c) {
		t.Fatal("tracked after CloseAll")
	}
	e, f := net.Pipe()
	defer f.Close()
	var s2 Set
	s2.Track(e)
	s2.Untrack(e)
	if _, err := e.Write([]byte("x")); err == nil {
		t.Fatal("Untrack did not close")
	}
}
