package store

import (
	"reflect"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

var jsonDecodeSeeds = []string{
	`{}`,
	` { "a" : [ 1 , -2 , 3.5 , 1e3 , -0 , 0.0 , 1E-2 , 9223372036854775807 , 9223372036854775808 , -9223372036854775809 ] } `,
	`{"s":"plain","e":"q\"b\\s\/n\nt\tr\rb\bf\f","u":"\u00e9\u2028\ud83d\ude00","bad":"\ud800x","bad2":"\udc00\ud800"}`,
	`{"utf8":"héllo ☃ 😀","inv":"a` + "\xff" + `b"}`,
	`{"n":null,"t":true,"f":false,"o":{"x":{"y":[[],{},[{}]]}}}`,
	`{"dup":1,"dup":2}`,
	`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a","namespace":"ns","labels":{"k":"v"},"generation":1},"spec":{"harness":"fake"}}`,
	// Malformed inputs must fail in both decoders.
	`{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1]`, `{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, `{"a":tru}`,
	`{"a":"x` + "\n" + `"}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"unterminated}`, `{"a":1} x`, `{"a":[1 2]}`,
	`{"a":"\ud800\u12"}`, `{"a":+1}`, `{"a":.5}`, `{"a":NaN}`, `{"a":1e999}`, ``,
}

// checkDecodeMatches asserts decodeJSONObject agrees with the API
// machinery's decoder: same value, or both fail.
func checkDecodeMatches(t *testing.T, in []byte) {
	t.Helper()
	want := map[string]interface{}{}
	werr := utiljson.Unmarshal(in, &want)
	got, gerr := decodeJSONObject(in)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%q: fast decoder error %v, API machinery error %v", in, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got  %#v\n want %#v", in, got, want)
	}
}

func TestDecodeJSONObject(t *testing.T) {
	for _, s := range jsonDecodeSeeds {
		checkDecodeMatches(t, []byte(s))
	}
}

func FuzzDecodeJSONObject(f *testing.F) {
	for _, s := range jsonDecodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecodeMatches(t, in)
	})
}
