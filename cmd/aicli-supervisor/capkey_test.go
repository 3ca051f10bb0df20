package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/internal/capability"
	"aicli.dev/aicli/internal/layout"
)

func runSupervisorCommand(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestCapKeyRotateAndList(t *testing.T) {
	dataDir := t.TempDir()
	k, err := capability.OpenKeyring(layout.Dir(dataDir).CapKeys())
	if err != nil {
		t.Fatal(err)
	}
	claims := capability.Claims{Namespace: "team-a", Agent: "ada", Conversation: "c1", Holder: "h1", Grant: "g",
		Tool: "greet", Expires: time.Now().Add(time.Hour)}
	tok, err := k.Mint(claims)
	if err != nil {
		t.Fatal(err)
	}
	first, err := k.List("team-a")
	if err != nil || len(first) != 1 {
		t.Fatalf("keys %+v, %v", first, err)
	}

	out, _, err := runSupervisorCommand(t, "capkey", "rotate", "team-a", "--grace", "30m", "--data-dir", dataDir)
	if err != nil {
		t.Fatal(err)
	}
	newID := strings.TrimSpace(out)
	if newID == "" || newID == first[0].ID {
		t.Fatalf("rotate printed %q (old key %s)", out, first[0].ID)
	}
	if _, _, err := runSupervisorCommand(t, "capkey", "rotate", "team-b", "--data-dir", dataDir); err != nil {
		t.Fatal(err)
	}

	out, _, err = runSupervisorCommand(t, "capkey", "list", "--data-dir", dataDir)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "NAMESPACE") {
		t.Fatalf("list:\n%s", out)
	}
	for _, want := range []string{"team-a     " + first[0].ID, "team-a     " + newID, "team-b     "} {
		if !strings.Contains(out, want) {
			t.Fatalf("list lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "true") != 2 {
		t.Fatalf("want one current key per namespace:\n%s", out)
	}
	if out, _, err = runSupervisorCommand(t, "capkey", "list", "team-b", "--data-dir", dataDir); err != nil ||
		strings.Contains(out, "team-a") {
		t.Fatalf("list team-b: %v\n%s", err, out)
	}

	// The keyring opened before the rotation sees it: old tokens still verify, new ones use the new key.
	p := capability.Presentation{Namespace: "team-a", Conversation: "c1", Holder: "h1", Tool: "greet"}
	if _, err := k.Verify(tok, p); err != nil {
		t.Fatalf("old token in grace: %v", err)
	}
	p.Now = time.Now().Add(31 * time.Minute)
	if _, err := k.Verify(tok, p); err == nil {
		t.Fatal("old token verifies after the grace")
	}
	st, err := os.Stat(filepath.Join(layout.Dir(dataDir).CapKeys(), "team-a.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", st, err)
	}

	for _, args := range [][]string{
		{"capkey", "rotate", "--data-dir", dataDir},
		{"capkey", "rotate", "Not_A_Namespace", "--data-dir", dataDir},
		{"capkey", "rotate", "team-a", "--grace", "-1s", "--data-dir", dataDir},
		{"capkey", "list", "a", "b", "--data-dir", dataDir},
	} {
		if _, _, err := runSupervisorCommand(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
