package toolmount

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func dirs(t *testing.T) Dirs {
	t.Helper()
	root := t.TempDir()
	bin := filepath.Join(root, "aicli-tool.bin")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return Dirs{Root: filepath.Join(root, "tools"), Binary: bin}
}

func TestSyncHoldsExactlyTheGrantedNames(t *testing.T) {
	d := dirs(t)
	dir, err := d.Sync("uid-1", []string{"greet", "search"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := d.List("uid-1"); !slices.Equal(got, []string{"greet", "search"}) {
		t.Fatalf("listed %v", got)
	}
	if target, _ := os.Readlink(filepath.Join(dir, "greet")); target != BinaryName {
		t.Fatalf("greet → %q", target)
	}
	bin, _ := os.Stat(filepath.Join(dir, BinaryName))
	src, _ := os.Stat(d.Binary)
	if !os.SameFile(bin, src) {
		t.Fatal("the binary is not a hard link of the built one")
	}
	// A revoked tool disappears; a new one appears; the directory stays.
	if _, err := d.Sync("uid-1", []string{"search", "mail"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.List("uid-1"); !slices.Equal(got, []string{"mail", "search"}) {
		t.Fatalf("after regrant %v", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "greet")); !os.IsNotExist(err) {
		t.Fatal("revoked tool still on the filesystem")
	}
	if err := d.Remove("uid-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("directory not removed")
	}
}

func TestSyncRefusesNamesThatEscape(t *testing.T) {
	d := dirs(t)
	for _, bad := range []string{"../x", "a/b", "", BinaryName, ".hidden", "UP"} {
		if _, err := d.Sync("uid", []string{bad}); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	if _, err := d.Sync("../uid", nil); err == nil {
		t.Error("uid escaping the root accepted")
	}
}

func TestSyncWithoutBinaryFails(t *testing.T) {
	d := dirs(t)
	d.Binary = filepath.Join(t.TempDir(), "missing")
	if _, err := d.Sync("uid", []string{"a"}); err == nil {
		t.Fatal("no error without the binary")
	}
}
