package secretwire

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadValue(t *testing.T) {
	v, err := ReadValue(strings.NewReader("sk-123\r\n"))
	if err != nil || string(v) != "sk-123" {
		t.Fatalf("trailing line break: %q %v", v, err)
	}
	if _, err := ReadValue(strings.NewReader("\n")); err == nil {
		t.Fatal("accepted an empty value")
	}
	if v, err := ReadValue(strings.NewReader(strings.Repeat("x", MaxValueBytes) + "\n")); err != nil || len(v) != MaxValueBytes {
		t.Fatalf("largest value: %d %v", len(v), err)
	}
	if _, err := ReadValue(strings.NewReader(strings.Repeat("x", MaxValueBytes+1))); err == nil {
		t.Fatal("accepted a value over the limit")
	}
}

func TestReadValueFrom(t *testing.T) {
	f := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(f, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := ReadValueFrom(f, strings.NewReader("from-stdin")); err != nil || string(v) != "from-file" {
		t.Fatalf("file: %q %v", v, err)
	}
	for _, name := range []string{"", "-"} {
		if v, err := ReadValueFrom(name, strings.NewReader("from-stdin")); err != nil || string(v) != "from-stdin" {
			t.Fatalf("%q: %q %v", name, v, err)
		}
	}
	if _, err := ReadValueFrom(filepath.Join(t.TempDir(), "absent"), nil); err == nil {
		t.Fatal("read an absent file")
	}
}
