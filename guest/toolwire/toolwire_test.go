package toolwire_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"aicli.dev/aicli/guest/toolwire"
)

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	req := toolwire.Request{Op: toolwire.OpCall, Tool: "greet", Args: []string{"--name=x", ""}, Token: "tok"}
	if err := toolwire.WriteJSON(&buf, toolwire.TypeRequest, req); err != nil {
		t.Fatal(err)
	}
	if err := toolwire.WriteData(&buf, toolwire.TypeStdin, bytes.Repeat([]byte("a"), toolwire.MaxDataPayload+1)); err != nil {
		t.Fatal(err)
	}
	if err := toolwire.WriteFrame(&buf, toolwire.TypeStdinEOF, nil); err != nil {
		t.Fatal(err)
	}
	if err := toolwire.WriteJSON(&buf, toolwire.TypeExit, toolwire.Exit{Code: 3, Message: "m"}); err != nil {
		t.Fatal(err)
	}
	got, err := toolwire.ReadRequest(&buf)
	if err != nil || got.Tool != "greet" || got.Token != "tok" || len(got.Args) != 2 || got.Validate() != nil {
		t.Fatalf("request %+v err %v", got, err)
	}
	var sizes []int
	for i := 0; i < 3; i++ {
		f, err := toolwire.ReadFrame(&buf)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(f.Payload))
	}
	if sizes[0] != toolwire.MaxDataPayload || sizes[1] != 1 || sizes[2] != 0 {
		t.Fatalf("data frames %v", sizes)
	}
	f, err := toolwire.ReadFrame(&buf)
	if err != nil || f.Type != toolwire.TypeExit {
		t.Fatalf("exit frame %v %v", f.Type, err)
	}
	var ex toolwire.Exit
	if err := toolwire.Decode(f, &ex); err != nil || ex.Code != 3 || ex.Message != "m" {
		t.Fatalf("exit %+v %v", ex, err)
	}
	if _, err := toolwire.ReadFrame(&buf); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func TestFrameLimits(t *testing.T) {
	if err := toolwire.WriteFrame(io.Discard, toolwire.TypeStdout, make([]byte, toolwire.MaxDataPayload+1)); !errors.Is(err, toolwire.ErrFrameTooLarge) {
		t.Errorf("oversize data write: %v", err)
	}
	cases := map[string][]byte{
		"oversize data":    {byte(toolwire.TypeStdout), 0, 1, 0, 1},
		"oversize request": {byte(toolwire.TypeRequest), 0x7f, 0, 0, 0},
		"eof with payload": {byte(toolwire.TypeStdinEOF), 0, 0, 0, 1, 'x'},
		"unknown type":     {9, 0, 0, 0, 0},
		"short payload":    {byte(toolwire.TypeStdout), 0, 0, 0, 4, 'a'},
		"short header":     {byte(toolwire.TypeStdout), 0},
	}
	for name, data := range cases {
		if _, err := toolwire.ReadFrame(bytes.NewReader(data)); err == nil || err == io.EOF {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

func TestRequestValidate(t *testing.T) {
	many := make([]string, toolwire.MaxArgs+1)
	big := []string{strings.Repeat("x", toolwire.MaxArgBytes+1)}
	bad := map[string]toolwire.Request{
		"unknown op":         {Op: "exec", Tool: "t"},
		"bad name":           {Op: toolwire.OpCall, Tool: "../x"},
		"empty name":         {Op: toolwire.OpCall},
		"too many args":      {Op: toolwire.OpCall, Tool: "t", Args: many},
		"args too large":     {Op: toolwire.OpCall, Tool: "t", Args: big},
		"delegate no peer":   {Op: toolwire.OpDelegate, Tool: "t", Delegate: &toolwire.DelegateArgs{}},
		"call with delegate": {Op: toolwire.OpCall, Tool: "t", Delegate: &toolwire.DelegateArgs{Peer: "p"}},
	}
	for name, r := range bad {
		if err := r.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := (toolwire.Request{Op: toolwire.OpCall, Tool: "t", Args: big}).Validate(); !errors.Is(err, toolwire.ErrArgsTooLarge) {
		t.Errorf("args too large: %v", err)
	}
	ok := toolwire.Request{Op: toolwire.OpDelegate, Tool: "greet", Delegate: &toolwire.DelegateArgs{Peer: "bob"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("delegate: %v", err)
	}
	// A maximal request still fits one control frame, even with worst-case escaping.
	worst := make([]string, 4)
	for i := range worst {
		worst[i] = strings.Repeat("\x01", toolwire.MaxArgBytes/4)
	}
	if err := toolwire.WriteJSON(io.Discard, toolwire.TypeRequest, toolwire.Request{Op: toolwire.OpCall, Tool: "t", Args: worst, Token: strings.Repeat("t", 8<<10)}); err != nil {
		t.Fatalf("maximal request: %v", err)
	}
}
