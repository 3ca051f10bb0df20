package secretwire

import (
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
