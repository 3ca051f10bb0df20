package tools_test

import (
	"errors"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/tools"
)

func TestBackendArgs(t *testing.T) {
	pins := map[string]string{"repo": "team/allowed", "env": "prod"}
	const tail = "--env=prod --repo=team/allowed --"
	cases := []struct {
		name     string
		args     []string
		pins     map[string]string
		declared []string
		want     string // the canonical argv joined by spaces; "" with refused
		refused  string // a substring of the refusal's message
	}{
		// Neither pins nor declared parameters: the caller's arguments unchanged.
		{name: "free-form", args: []string{"-repo=evil/other", "-out", "--x"}, want: "-repo=evil/other -out --x"},
		{name: "free-form empty", want: ""},

		// The attacks on an option parser.
		{name: "go flag single dash", args: []string{"-repo=evil/other", "-out"}, pins: pins, refused: `"-repo=evil/other"`},
		{name: "single dash swallowing the pin", args: []string{"-out"}, pins: pins, refused: `"-out"`},
		{name: "getopt abbreviation", args: []string{"--rep=evil"}, pins: pins, refused: `could be read as the pinned parameter "repo"`},
		{name: "one-letter abbreviation", args: []string{"--r=evil"}, pins: pins, refused: `"r"`},
		{name: "other case", args: []string{"--REPO=evil"}, pins: pins, refused: `"REPO"`},
		{name: "underscore for dash", args: []string{"--dry_r=1"}, pins: map[string]string{"dry-run": "1"}, refused: `"dry_r"`},
		{name: "separate value", args: []string{"--repo", "evil"}, pins: pins, refused: `"--repo"`},
		{name: "bare unpinned option", args: []string{"--out"}, pins: pins, refused: `"--out"`},
		{name: "triple dash", args: []string{"---repo=x"}, pins: pins, refused: `"---repo=x"`},
		{name: "empty name", args: []string{"--=x"}, pins: pins, refused: `"--=x"`},
		{name: "space in name", args: []string{"--re po=x"}, pins: pins, refused: `"--re po=x"`},
		{name: "other pinned value", args: []string{"--repo=x"}, pins: pins, refused: `parameter "repo" is pinned`},
		{name: "lone dash", args: []string{"-"}, pins: pins, refused: `"-"`},
		{name: "short option", args: []string{"-h"}, pins: pins, refused: `"-h"`},

		// What passes, canonically.
		{name: "no args", pins: pins, want: tail},
		{name: "pinned value dropped", args: []string{"--repo=team/allowed", "x"}, pins: pins, want: tail + " x"},
		{name: "params first, operands last", args: []string{"a", "--q=1", "b", "--q=2"}, pins: pins, want: "--q=1 --q=2 " + tail + " a b"},
		{name: "a longer name than a pin", args: []string{"--repository=x"}, pins: pins, want: "--repository=x " + tail},
		{name: "value that looks like an option", args: []string{"--out=-repo=evil"}, pins: pins, want: "--out=-repo=evil " + tail},
		{name: "empty value and operand", args: []string{"--q=", ""}, pins: pins, want: "--q= " + tail + " "},
		{name: "caller's -- ends the options", args: []string{"a", "--", "-repo=x", "--repo=evil", "-", "--"}, pins: pins,
			want: tail + " a -repo=x --repo=evil - --"},
		{name: "unicode dashes are operands", args: []string{"—repo=evil", "−repo=evil", "‐‐repo=evil", "－repo"}, pins: pins,
			want: tail + " —repo=evil −repo=evil ‐‐repo=evil －repo"},

		// Declared parameters.
		{name: "declared", args: []string{"--out=f", "x"}, declared: []string{"out"}, want: "--out=f -- x"},
		{name: "undeclared", args: []string{"--other=1"}, declared: []string{"out"}, refused: `"other" is not declared`},
		{name: "declared none", args: []string{"--out=1"}, declared: []string{}, refused: "takes no parameters"},
		{name: "declared none, operands", args: []string{"x"}, declared: []string{}, want: "-- x"},
		{name: "declared with pins", args: []string{"--out=f", "--repo=team/allowed"}, pins: pins, declared: []string{"out"}, want: "--out=f " + tail},
		{name: "declared abbreviation of a pin", args: []string{"--rep=x"}, pins: pins, declared: []string{"rep"}, refused: `"rep"`},
		{name: "declared, single dash", args: []string{"-out=f"}, declared: []string{"out"}, refused: `"-out=f"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tools.BackendArgs(tc.args, tc.pins, tc.declared)
			if tc.refused != "" {
				var r *tools.Refusal
				if !errors.As(err, &r) || r.Reason != "param_mismatch" || !strings.Contains(r.Message, tc.refused) {
					t.Fatalf("got %q, err %v; want a param_mismatch naming %s", got, err, tc.refused)
				}
				return
			}
			if err != nil || strings.Join(got, " ") != tc.want {
				t.Fatalf("got %q, err %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestBackendArgsRefusalSaysWhatIsAllowed(t *testing.T) {
	_, err := tools.BackendArgs([]string{"--zzz=1"}, map[string]string{"repo": "r"}, []string{"out", "q"})
	var r *tools.Refusal
	if !errors.As(err, &r) {
		t.Fatal(err)
	}
	for _, s := range []string{`"zzz"`, "out, q", "pinned: repo", "after --"} {
		if !strings.Contains(r.Message, s) {
			t.Errorf("message %q does not say %q", r.Message, s)
		}
	}
	if strings.Contains(r.Message, "=r") {
		t.Errorf("message %q shows a pinned value", r.Message)
	}
}
