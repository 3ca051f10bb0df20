package layout

import (
	"path/filepath"
	"testing"
)

func TestLayoutKeyDirsAreDistinct(t *testing.T) {
	d := Dir("/data")
	if got, want := d.CapKeys(), filepath.Join("/data", "capkeys"); got != want {
		t.Fatalf("CapKeys() = %q, want %q", got, want)
	}
	seen := map[string]string{}
	for name, p := range map[string]string{"CapKeys": d.CapKeys(), "Secrets": d.Secrets(), "Keys": d.Keys(),
		"TLS": d.TLS(), "Store": d.Store(), "Run": d.Run(), "Agents": d.Agents(), "History": d.History(),
		"Recall": d.Recall()} {
		if other, ok := seen[p]; ok {
			t.Fatalf("%s and %s share %s", name, other, p)
		}
		seen[p] = name
	}
}
