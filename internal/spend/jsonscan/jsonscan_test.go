package jsonscan

import (
	"strings"
	"testing"
)

func TestObjectSkipsValuesAndFindsKeys(t *testing.T) {
	line := []byte(`{"a":"x\"}{[\\","b":{"c":[1,{"d":"}"}],"e":null},"big":"` + strings.Repeat(`q\"z`, 1000) + `","n":-12.5e3,"t":true,"u":"\u00e9"}`)
	got := map[string]string{}
	end, ok := Object(line, 0, func(k []byte, vs, ve int) bool {
		got[string(k)] = string(line[vs:ve])
		return true
	})
	if !ok || end != len(line) {
		t.Fatalf("ok %v end %d len %d", ok, end, len(line))
	}
	if got["a"] != `"x\"}{[\\"` || got["b"] != `{"c":[1,{"d":"}"}],"e":null}` || got["n"] != "-12.5e3" || got["t"] != "true" {
		t.Fatalf("members %v", got)
	}
	if s, ok := String([]byte(got["a"])); !ok || s != `x"}{[\` {
		t.Fatalf("String(a) = %q %v", s, ok)
	}
	if s, ok := String([]byte(got["u"])); !ok || s != "é" {
		t.Fatalf("String(u) = %q %v", s, ok)
	}
}

func TestMalformed(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a"`, `{"a":`, `{"a":"unterminated}`, `{"a":1,}`, `{"a" 1}`, `{"a":[1,2}`, `[1]`, `{"a":1 "b":2}`} {
		if _, ok := Object([]byte(in), 0, func([]byte, int, int) bool { return true }); ok {
			t.Errorf("Object(%q) accepted", in)
		}
	}
}

func TestUint(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "123456789": 123456789} {
		if got, ok := Uint([]byte(in)); !ok || got != want {
			t.Errorf("Uint(%q) = %d %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "-1", "1.5", `"5"`, "1e3", "9999999999999999999"} {
		if _, ok := Uint([]byte(in)); ok {
			t.Errorf("Uint(%q) accepted", in)
		}
	}
}

func TestStopEarly(t *testing.T) {
	line := []byte(`{"type":"response_item","payload":{"huge":"` + strings.Repeat("x", 1<<16))
	var keys []string
	_, ok := Object(line, 0, func(k []byte, _, _ int) bool {
		keys = append(keys, string(k))
		return false
	})
	if !ok || len(keys) != 1 || keys[0] != "type" {
		t.Fatalf("early stop: ok %v keys %v", ok, keys)
	}
}
