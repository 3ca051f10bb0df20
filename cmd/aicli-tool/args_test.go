package main

import (
	"reflect"
	"testing"

	"aicli.dev/aicli/guest/toolwire"
)

func TestParse(t *testing.T) {
	cases := []struct {
		argv0 string
		args  []string
		want  toolwire.Request
	}{
		{"greet", []string{"a", "--b=c"}, toolwire.Request{Op: toolwire.OpCall, Tool: "greet", Args: []string{"a", "--b=c"}}},
		{"greet", []string{"--help"}, toolwire.Request{Op: toolwire.OpHelp, Tool: "greet"}},
		{"greet", []string{"--help", "x"}, toolwire.Request{Op: toolwire.OpCall, Tool: "greet", Args: []string{"--help", "x"}}},
		{"aicli-tool", []string{"greet", "x"}, toolwire.Request{Op: toolwire.OpCall, Tool: "greet", Args: []string{"x"}}},
		{"aicli-tool", []string{"delegate", "bob", "greet", "--param", "k=v", "--calls-per-hour=5", "--ttl", "1h"},
			toolwire.Request{Op: toolwire.OpDelegate, Tool: "greet", Delegate: &toolwire.DelegateArgs{Peer: "bob", Params: map[string]string{"k": "v"}, CallsPerHour: 5, TTL: "1h"}}},
	}
	for _, tc := range cases {
		got, err := parse(tc.argv0, tc.args)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %q: got %+v err %v", tc.argv0, tc.args, got, err)
		}
	}
	for _, bad := range [][]string{{}, {"delegate", "bob"}, {"delegate", "bob", "greet", "--ttl", "soon"}, {"delegate", "bob", "greet", "--param", "x"}, {"delegate", "bob", "greet", "--what", "1"}, {"../x"}} {
		if _, err := parse("aicli-tool", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
