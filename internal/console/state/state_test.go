package state_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/console/state"
)

func TestUpdateIsDurableAndGetCopies(t *testing.T) {
	dir := t.TempDir()
	f, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := f.Get(); d.PasswordHash != "" || len(d.Supervisors) != 0 {
		t.Fatalf("a missing file is not empty state: %+v", d)
	}
	if err := f.Update(func(d *state.Data) {
		d.Supervisors = []state.Supervisor{{Name: "a", Server: "unix:///a/supervisor.sock"}}
		d.Aliases = map[string]string{"a/default/coder": "Coder"}
	}); err != nil {
		t.Fatal(err)
	}
	got := f.Get()
	got.Aliases["a/default/coder"] = "changed"
	got.Supervisors[0].Name = "changed"
	if d := f.Get(); d.Aliases["a/default/coder"] != "Coder" || d.Supervisors[0].Name != "a" {
		t.Fatalf("Get shares its maps or slices: %+v", d)
	}
	info, err := os.Stat(filepath.Join(dir, state.FileName))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, %v", info, err)
	}
	again, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := again.Get(); len(d.Supervisors) != 1 || d.Aliases["a/default/coder"] != "Coder" {
		t.Fatalf("reopened: %+v", d)
	}
}

func TestABrokenFileSaysItMayBeDeleted(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, state.FileName), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := state.Open(dir)
	if err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Fatalf("err = %v", err)
	}
}
