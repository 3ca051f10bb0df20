package tools_test

import (
	"errors"
	"reflect"
	"testing"

	"aicli.dev/aicli/internal/tools"
)

func TestParseParams(t *testing.T) {
	got := tools.ParseParams([]string{"--a=1", "b", "--c=", "--=x", "-d=2", "--a=3", "--e"})
	want := map[string]string{"a": "3", "c": ""}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
}

func TestApplyPins(t *testing.T) {
	pins := map[string]string{"repo": "main", "env": "prod"}
	cases := []struct {
		name string
		args []string
		want []string
		err  bool
	}{
		{"no args", nil, []string{"--env=prod", "--repo=main"}, false},
		{"same value dropped", []string{"x", "--repo=main"}, []string{"x", "--env=prod", "--repo=main"}, false},
		{"other value", []string{"--repo=dev"}, nil, true},
		{"bare pinned flag", []string{"--repo", "dev"}, nil, true},
		{"unpinned kept", []string{"--q=1"}, []string{"--q=1", "--env=prod", "--repo=main"}, false},
		{"operands after --", []string{"a", "--", "--repo=dev"}, []string{"a", "--env=prod", "--repo=main", "--", "--repo=dev"}, false},
	}
	for _, tc := range cases {
		got, err := tools.ApplyPins(tc.args, pins)
		var r *tools.Refusal
		if tc.err {
			if !errors.As(err, &r) || r.Reason != "param_mismatch" {
				t.Errorf("%s: err %v", tc.name, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %q err %v", tc.name, got, err)
		}
	}
	if got, _ := tools.ApplyPins([]string{"a"}, nil); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("no pins: %q", got)
	}
}
