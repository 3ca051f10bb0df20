package framework

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestNewRunID(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9][a-z0-9-]*-[0-9a-f]{8}$`)
	for _, name := range []string{"creates, starts & stops", "", "   ", strings.Repeat("Long Spec Name ", 10), "UPPER_case"} {
		id := NewRunID(name)
		if !re.MatchString(id) || len(id) > 49 {
			t.Errorf("NewRunID(%q) = %q", name, id)
		}
	}
	if a, b := NewRunID("x"), NewRunID("x"); a == b {
		t.Errorf("run ids collide: %s", a)
	}
	if got := NewRunID("Creates, starts & stops"); !strings.HasPrefix(got, "creates-starts-stops-") {
		t.Errorf("slug %q", got)
	}
}

func TestModuleRoot(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("root %s has no go.mod: %v", root, err)
	}
	if _, err := os.Stat(filepath.Join(root, "e2e", "framework")); err != nil {
		t.Fatalf("root %s is not this module's: %v", root, err)
	}
}
