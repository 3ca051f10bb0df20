package ptyhost

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/claude"
	"aicli.dev/aicli/guest/harness/codex"
	"aicli.dev/aicli/guest/harness/fake"
	"aicli.dev/aicli/guest/harness/fake/cli"
	"aicli.dev/aicli/guest/harness/gemini"
	"aicli.dev/aicli/guest/harness/opencode"
	"aicli.dev/aicli/guest/ptyapi"
)

// instructionsHost is a host (never started) over adapter a whose log goes to
// the returned buffer.
func instructionsHost(t *testing.T, e env, a harness.Adapter) (*Host, *bytes.Buffer) {
	t.Helper()
	reg, err := harness.NewRegistry(a)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	h, err := New(Options{Registry: reg, Home: e.home, WorkDir: e.work, RunAs: &Credential{UID: testUID, GID: testUID},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return h, &logs
}

// launchWith prepares the home as Start does for a launch with instructions text.
func launchWith(h *Host, a harness.Adapter, text string) error {
	return h.prepareHome(a, harness.LaunchRequest{StartRequest: ptyapi.StartRequest{Instructions: text},
		Home: h.opts.Home, WorkDir: h.opts.WorkDir})
}

// block is the guest's block holding text.
func block(text string) string {
	return harness.InstructionsBegin + "\n" + text + "\n" + harness.InstructionsEnd + "\n"
}

func TestInstructionsFilePerHarness(t *testing.T) {
	for _, c := range []struct {
		a    harness.Adapter
		path string
	}{
		{claude.New(claude.Options{}), ".claude/CLAUDE.md"},
		{codex.New(codex.Options{}), ".codex/AGENTS.md"},
		{gemini.New(gemini.Options{}), ".gemini/GEMINI.md"},
		{opencode.New(opencode.Options{}), ".config/opencode/AGENTS.md"},
		{fake.New(fake.Options{}), cli.InstructionsPath},
	} {
		t.Run(c.a.Name(), func(t *testing.T) {
			e := newEnv(t)
			h, logs := instructionsHost(t, e, c.a)
			p := filepath.Join(e.home, c.path)
			read := func() string {
				t.Helper()
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}

			// Written at launch, owned by the CLI user, private.
			if err := launchWith(h, c.a, "You are Pete.\nBe brief."); err != nil {
				t.Fatal(err)
			}
			if got := read(); got != block("You are Pete.\nBe brief.") {
				t.Fatalf("written: %q", got)
			}
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if sys := st.Sys().(*syscall.Stat_t); sys.Uid != testUID || st.Mode().Perm() != 0o600 {
				t.Errorf("owner %d mode %v, want %d 0600", sys.Uid, st.Mode().Perm(), testUID)
			}
			// Rewritten from the request at the next launch; removed when there are none.
			if err := launchWith(h, c.a, "You are Ann."); err != nil {
				t.Fatal(err)
			}
			if got := read(); got != block("You are Ann.") {
				t.Fatalf("rewritten: %q", got)
			}
			if err := launchWith(h, c.a, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("without instructions the file stays: %v", err)
			}

			// A file someone else wrote is kept, the block added to it and taken out again, loudly.
			const mine = "# mine\nAnswer in French.\n"
			if err := os.WriteFile(p, []byte(mine), 0o640); err != nil {
				t.Fatal(err)
			}
			if err := launchWith(h, c.a, "You are Pete."); err != nil {
				t.Fatal(err)
			}
			if got := read(); got != mine+"\n"+block("You are Pete.") {
				t.Fatalf("with a user's file: %q", got)
			}
			if st, _ := os.Stat(p); st.Mode().Perm() != 0o640 {
				t.Errorf("the user's mode %v was not kept", st.Mode().Perm())
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "did not write") {
				t.Errorf("no warning about the user's text; log:\n%s", logs)
			}
			if err := launchWith(h, c.a, ""); err != nil {
				t.Fatal(err)
			}
			if got := read(); got != mine {
				t.Fatalf("the user's file after the instructions went: %q", got)
			}

			// Damaged markers: the start is refused and the file left alone.
			damaged := mine + harness.InstructionsBegin + "\nhalf a block\n"
			if err := os.WriteFile(p, []byte(damaged), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := launchWith(h, c.a, "You are Pete."); !errors.Is(err, ptyapi.ErrInvalidArgument) ||
				!strings.Contains(err.Error(), c.path) {
				t.Fatalf("damaged block: %v", err)
			}
			if got := read(); got != damaged {
				t.Fatalf("a damaged file was changed: %q", got)
			}
		})
	}
}

func TestInstructionsNeverLeaveTheHome(t *testing.T) {
	e := newEnv(t)
	a := claude.New(claude.Options{})
	h, _ := instructionsHost(t, e, a)
	outside := filepath.Join(filepath.Dir(e.home), "outside.md")
	if err := os.WriteFile(outside, []byte("not the guest's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.home, claude.InstructionsPath)); err != nil {
		t.Fatal(err)
	}
	if err := launchWith(h, a, "You are Pete."); err == nil {
		t.Fatal("instructions written through a link that leaves the home")
	}
	if b, _ := os.ReadFile(outside); string(b) != "not the guest's\n" {
		t.Fatalf("the file outside the home changed: %q", b)
	}

	// A link that stays inside the home is written through (it stays a link).
	inside := filepath.Join(e.home, "dotfiles", "CLAUDE.md")
	if err := os.MkdirAll(filepath.Dir(inside), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inside, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(e.home, claude.InstructionsPath)
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../dotfiles/CLAUDE.md", link); err != nil {
		t.Fatal(err)
	}
	if err := launchWith(h, a, "You are Pete."); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(inside); string(b) != "mine\n\n"+block("You are Pete.") {
		t.Fatalf("through an in-home link: %q", b)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", st.Mode(), err)
	}
}

func TestCodexInstructionsFollowItsOverrideFile(t *testing.T) {
	e := newEnv(t)
	a := codex.New(codex.Options{})
	h, _ := instructionsHost(t, e, a)
	override := filepath.Join(e.home, codex.InstructionsOverridePath)
	if err := os.MkdirAll(filepath.Dir(override), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(override, []byte("my override\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := launchWith(h, a, "You are Pete."); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(override); string(b) != "my override\n\n"+block("You are Pete.") {
		t.Fatalf("override file: %q", b)
	}
	if _, err := os.Stat(filepath.Join(e.home, codex.InstructionsPath)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("AGENTS.md written although Codex reads only the override: %v", err)
	}
}

func TestTheFakeCLIReportsItsInstructions(t *testing.T) {
	e := newEnv(t)
	h := newHost(t, e)
	start(t, h, ptyapi.StartRequest{Instructions: "You are Pirate Pete.\nSpeak like a pirate."})
	waitScreen(t, h, "instructions: You are Pirate Pete.")
	waitStatus(t, h, ptyapi.StatusIdle)
	if err := h.SendMessage(context.Background(), "who are you "+cli.MarkInstructions); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, "fake[turn 1]: who are you !instructions | instructions: You are Pirate Pete.")
}

// TestSeedFilesNeverLeaveTheHome: the guest (root) writes the CLI's seed
// config through an os.Root on the home, so a link the CLI planted there
// cannot make it overwrite a file elsewhere.
func TestSeedFilesNeverLeaveTheHome(t *testing.T) {
	e := newEnv(t)
	a := claude.New(claude.Options{})
	h, _ := instructionsHost(t, e, a)
	outside := filepath.Join(filepath.Dir(e.home), "elsewhere.json")
	if err := os.WriteFile(outside, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.home, ".claude.json")); err != nil {
		t.Fatal(err)
	}
	if err := launchWith(h, a, ""); err == nil {
		t.Fatal("a seed file was written through a link that leaves the home")
	}
	if b, _ := os.ReadFile(outside); string(b) != "{}\n" {
		t.Fatalf("the file outside the home changed: %q", b)
	}
	// Without the link the same launch seeds the file, owned by the CLI user.
	if err := os.Remove(filepath.Join(e.home, ".claude.json")); err != nil {
		t.Fatal(err)
	}
	if err := launchWith(h, a, ""); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(e.home, ".claude.json"))
	if err != nil || st.Sys().(*syscall.Stat_t).Uid != testUID {
		t.Fatalf("seeded file: %v %+v", err, st)
	}
}
