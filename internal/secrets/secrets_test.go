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

func TestStatListAndInvalid(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	if got, err := s.List("team-a"); err != nil || len(got) != 0 {
		t.Fatalf("empty namespace: %v %v", got, err)
	}
	for name, v := range map[string]string{"b-key": "12345", "a-key": "1"} {
		if err := s.Set("team-a", name, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.List("team-a")
	if err != nil || len(got) != 2 || got[0].Name != "a-key" || got[0].Size != 1 || got[1].Name != "b-key" || got[1].Size != 5 ||
		got[0].Modified.IsZero() {
		t.Fatalf("list: %+v %v", got, err)
	}
	if info, err := s.Stat("team-a", "b-key"); err != nil || info.Size != 5 {
		t.Fatalf("stat: %+v %v", info, err)
	}
	if _, err := s.Stat("team-a", "ghost"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("stat missing: %v", err)
	}
	if err := s.Set("team-a", "Bad", []byte("v")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad name: %v", err)
	}
	if err := s.Set("team-a", "empty", nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty value: %v", err)
	}
	if _, err := s.List("../x"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad namespace: %v", err)
	}
}
