package fleet

import (
	"testing"

	"aicli.dev/aicli/internal/client"
)

func TestParseFlag(t *testing.T) {
	got := ParseFlag([]string{"a=unix:///srv/a/supervisor.sock", "https://b.example:7443", " ", client.DefaultServer(),
		"unix:///srv/c/supervisor.sock"})
	want := []string{"a unix:///srv/a/supervisor.sock", "b.example:7443 https://b.example:7443",
		"local " + client.DefaultServer(), "c unix:///srv/c/supervisor.sock"}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if g := got[i].Name + " " + got[i].Server; g != want[i] {
			t.Errorf("entry %d: %q, want %q", i, g, want[i])
		}
	}
}

func TestNewRefusesTwoSupervisorsWithOneName(t *testing.T) {
	if _, err := New(ParseFlag([]string{"a=unix:///x/s.sock", "a=unix:///y/s.sock"})); err == nil {
		t.Fatal("two supervisors named a were accepted")
	}
	if _, err := New(nil); err == nil {
		t.Fatal("no supervisor was accepted")
	}
}
