package secrets

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSetGetDelete(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	if _, err := s.Get("team-a", "anthropic"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing secret: %v", err)
	}
	if err := s.Set("team-a", "anthropic", []byte("sk-test-0123456789abcdefghij")); err != nil {
		t.Fatal(err)
	}
	v, err := s.Get("team-a", "anthropic")
	if err != nil || string(v) != "sk-test-0123456789abcdefghij" {
		t.Fatalf("get: %q %v", v, err)
	}
	fi, err := os.Stat(filepath.Join(s.Dir, "team-a", "anthropic"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v %v", fi.Mode(), err)
	}
	for _, bad := range [][2]string{{"../etc", "x"}, {"ns", "a/b"}, {"ns", ""}, {"NS", "x"}} {
		if err := s.Set(bad[0], bad[1], []byte("v")); err == nil {
			t.Errorf("accepted %q/%q", bad[0], bad[1])
		}
	}
	if err := s.Set("ns", "empty", nil); err == nil {
		t.Error("accepted an empty secret")
	}
	if err := s.Delete("team-a", "anthropic"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("team-a", "anthropic"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}
