package harness

import (
	"strings"
	"testing"
)

// block is the guest's block holding text, as MergeInstructions writes it.
func block(text string) string {
	return InstructionsBegin + "\n" + text + "\n" + InstructionsEnd + "\n"
}

func TestMergeInstructions(t *testing.T) {
	const user = "# My notes\n\nAlways answer in French.\n"
	cases := []struct {
		name     string
		existing *string // nil: no file
		text     string
		want     InstructionsUpdate
	}{
		{"no file, no instructions: nothing", nil, "", InstructionsUpdate{}},
		{"no file: the block alone", nil, "You are Pete.\nBe brief.\n",
			InstructionsUpdate{Write: true, Data: []byte(block("You are Pete.\nBe brief."))}},
		{"our file, same instructions: unchanged", ptr(block("You are Pete.")), "You are Pete.", InstructionsUpdate{}},
		{"our file, edited instructions: rewritten", ptr(block("You are Pete.")), "You are Ann.",
			InstructionsUpdate{Write: true, Data: []byte(block("You are Ann."))}},
		{"our file, instructions gone: removed", ptr(block("You are Pete.")), "", InstructionsUpdate{Remove: true}},
		{"blank instructions count as none", ptr(block("You are Pete.")), " \n\t\n", InstructionsUpdate{Remove: true}},
		{"a user's file: kept, block appended", ptr(user), "You are Pete.",
			InstructionsUpdate{Write: true, Foreign: true, Data: []byte(user + "\n" + block("You are Pete."))}},
		{"a user's file without a trailing newline", ptr("notes"), "You are Pete.",
			InstructionsUpdate{Write: true, Foreign: true, Data: []byte("notes\n\n" + block("You are Pete."))}},
		{"a user's file, no instructions: untouched", ptr(user), "", InstructionsUpdate{Foreign: true}},
		{"a user's file with our block, same: unchanged", ptr(user + "\n" + block("You are Pete.")), "You are Pete.",
			InstructionsUpdate{Foreign: true}},
		{"a user's file with our block, edited: only the block changes", ptr(user + "\n" + block("You are Pete.")),
			"You are Ann.", InstructionsUpdate{Write: true, Foreign: true, Data: []byte(user + "\n" + block("You are Ann."))}},
		{"a user's file with our block, none: back to the user's text", ptr(user + "\n" + block("You are Pete.")), "",
			InstructionsUpdate{Write: true, Foreign: true, Data: []byte(user)}},
		{"our block in the middle stays there", ptr("top\n" + block("old") + "bottom\n"), "new",
			InstructionsUpdate{Write: true, Foreign: true, Data: []byte("top\n" + block("new") + "bottom\n")}},
		{"our block in the middle, none: the rest as it was", ptr("top\n" + block("old") + "bottom\n"), "",
			InstructionsUpdate{Write: true, Foreign: true, Data: []byte("top\nbottom\n")}},
		{"an older begin line is still ours", ptr(InstructionsBeginPrefix + " (v0) -->\nold\n" + InstructionsEnd + "\n"),
			"new", InstructionsUpdate{Write: true, Data: []byte(block("new"))}},
		{"an empty file is nobody's", ptr(""), "You are Pete.",
			InstructionsUpdate{Write: true, Data: []byte(block("You are Pete."))}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var existing []byte
			if c.existing != nil {
				existing = []byte(*c.existing)
			}
			got, err := MergeInstructions(existing, c.text)
			if err != nil {
				t.Fatal(err)
			}
			if got.Write != c.want.Write || got.Remove != c.want.Remove || got.Foreign != c.want.Foreign ||
				string(got.Data) != string(c.want.Data) {
				t.Fatalf("got %+v (data %q)\nwant %+v (data %q)", got, got.Data, c.want, c.want.Data)
			}
		})
	}
}

func TestMergeInstructionsRefusesDamagedMarkers(t *testing.T) {
	for name, content := range map[string]string{
		"begin never closed":  "notes\n" + InstructionsBegin + "\nold\n",
		"end without a begin": "notes\n" + InstructionsEnd + "\n",
		"end before begin":    InstructionsEnd + "\n" + InstructionsBegin + "\n",
		"two blocks":          block("a") + block("b"),
	} {
		t.Run(name, func(t *testing.T) {
			for _, text := range []string{"new", ""} {
				if upd, err := MergeInstructions([]byte(content), text); err == nil {
					t.Fatalf("text %q: no error, update %+v", text, upd)
				}
			}
		})
	}
}

func TestMergeInstructionsEscapesMarkersInTheText(t *testing.T) {
	text := "Be nice.\n" + InstructionsEnd + "\n" + InstructionsBegin + "\nStill me."
	upd, err := MergeInstructions(nil, text)
	if err != nil || !upd.Write {
		t.Fatalf("%+v %v", upd, err)
	}
	if strings.Count(string(upd.Data), "\n"+InstructionsEnd+"\n") != 1 {
		t.Fatalf("the text's marker lines were not escaped:\n%s", upd.Data)
	}
	// It parses back as one block: an edit replaces all of it.
	again, err := MergeInstructions(upd.Data, "other")
	if err != nil || string(again.Data) != block("other") {
		t.Fatalf("rewrite: %q %v", again.Data, err)
	}
	if gone, err := MergeInstructions(upd.Data, ""); err != nil || !gone.Remove {
		t.Fatalf("remove: %+v %v", gone, err)
	}
}

func ptr(s string) *string { return &s }
