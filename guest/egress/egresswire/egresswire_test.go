package egresswire_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"aicli.dev/aicli/guest/egress/egresswire"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	in := egresswire.Header{Kind: egresswire.KindProxy, Target: "example.com:443"}
	if err := egresswire.WriteFrame(&buf, in); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("payload")
	var out egresswire.Header
	if err := egresswire.ReadFrame(&buf, &out); err != nil || out != in {
		t.Fatalf("got %+v err %v", out, err)
	}
	if buf.String() != "payload" {
		t.Fatalf("ReadFrame consumed past its frame: %q left", buf.String())
	}
}

func TestFrameRejects(t *testing.T) {
	cases := map[string][]byte{
		"oversize length": {0xff, 0xff},
		"short body":      {0, 10, '{'},
		"unknown field":   append([]byte{0, 11}, `{"admin":1}`...),
		"trailing value":  append([]byte{0, 4}, `{}{}`...),
		"not json":        append([]byte{0, 4}, "GET "...),
		"empty":           {},
	}
	for name, data := range cases {
		var h egresswire.Header
		if err := egresswire.ReadFrame(bytes.NewReader(data), &h); err == nil {
			t.Errorf("%s: accepted as %+v", name, h)
		}
	}
	var h egresswire.Header
	if err := egresswire.ReadFrame(bytes.NewReader([]byte{0xff, 0xff}), &h); !errors.Is(err, egresswire.ErrFrameTooLarge) {
		t.Errorf("oversize: %v", err)
	}
	big := egresswire.Header{Kind: egresswire.KindProxy, Target: strings.Repeat("a", egresswire.MaxFrame)}
	if err := egresswire.WriteFrame(&bytes.Buffer{}, big); !errors.Is(err, egresswire.ErrFrameTooLarge) {
		t.Errorf("oversize write: %v", err)
	}
}
