package tools_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/guest/toolwire"
	"aicli.dev/aicli/internal/gateway"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/tools"
)

// fakeAuth authorises the tools it holds, refusing everything else.
type fakeAuth struct {
	mu    sync.Mutex
	tools map[string]*tools.Authorization
	seen  []tools.Caller
}

func (f *fakeAuth) Authorize(_ context.Context, c tools.Caller, r toolwire.Request) (*tools.Authorization, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, c)
	if r.Token != "good" {
		return nil, &tools.Refusal{Reason: "invalid_token", Message: "the capability does not verify"}
	}
	a, ok := f.tools[r.Tool]
	if !ok {
		return nil, &tools.Refusal{Reason: "not_granted", Message: "no such grant"}
	}
	out := *a
	out.Args = r.Args
	return &out, nil
}

// records collects CallRecords.
type records struct {
	mu  sync.Mutex
	all []tools.CallRecord
}

func (r *records) Record(c tools.CallRecord) {
	r.mu.Lock()
	r.all = append(r.all, c)
	r.mu.Unlock()
}

func (r *records) snapshot() []tools.CallRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]tools.CallRecord(nil), r.all...)
}

func execTool(name, cmd string, args ...string) *tools.Authorization {
	return &tools.Authorization{Namespace: "ns", Agent: "a", Conversation: "c", Grant: "g",
		Tool: grants.ResolvedTool{Name: name, Usage: name + " does things",
			Backend: v1alpha1.ToolBackend{Exec: &v1alpha1.ExecBackend{Command: cmd, Args: args}}}}
}

func newServer(t testing.TB, auth *fakeAuth, mod ...func(*tools.Options)) (*tools.Server, *records) {
	t.Helper()
	rec := &records{}
	opts := tools.Options{Authorizer: auth, Recorder: rec, RequestTimeout: 2 * time.Second}
	for _, m := range mod {
		m(&opts)
	}
	s, err := tools.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, rec
}

// result is what a caller saw.
type result struct {
	stdout, stderr string
	exit           toolwire.Exit
	err            error
}

// callRaw serves one stream whose guest side writes raw (header included) then stdin, and collects the answer.
func callRaw(s *tools.Server, raw []byte, stdin []byte) result {
	guest, sup := net.Pipe()
	go s.ServeGuestStream(gateway.GuestStream{ConversationID: "conv-1", GuestFingerprint: "sha256:ab"}, sup)
	defer func() { _ = guest.Close() }()
	_ = guest.SetDeadline(time.Now().Add(30 * time.Second))
	go func() {
		if _, err := guest.Write(raw); err != nil {
			return
		}
		if err := toolwire.WriteData(guest, toolwire.TypeStdin, stdin); err != nil {
			return
		}
		_ = toolwire.WriteFrame(guest, toolwire.TypeStdinEOF, nil)
	}()
	return readResult(guest)
}

func readResult(r io.Reader) result {
	var out, errb bytes.Buffer
	for {
		f, err := toolwire.ReadFrame(r)
		if err != nil {
			return result{stdout: out.String(), stderr: errb.String(), err: err}
		}
		switch f.Type {
		case toolwire.TypeStdout:
			out.Write(f.Payload)
		case toolwire.TypeStderr:
			errb.Write(f.Payload)
		case toolwire.TypeExit:
			var ex toolwire.Exit
			err := toolwire.Decode(f, &ex)
			return result{stdout: out.String(), stderr: errb.String(), exit: ex, err: err}
		}
	}
}

func requestBytes(t testing.TB, req toolwire.Request) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := egresswire.WriteFrame(&b, egresswire.Header{Kind: egresswire.KindTool}); err != nil {
		t.Fatal(err)
	}
	if err := toolwire.WriteJSON(&b, toolwire.TypeRequest, req); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func call(t testing.TB, s *tools.Server, tool string, stdin string, args ...string) result {
	t.Helper()
	return callRaw(s, requestBytes(t, toolwire.Request{Op: toolwire.OpCall, Tool: tool, Args: args, Token: "good"}), []byte(stdin))
}

// callRawClose sends raw and closes the guest side after a moment, without stdin EOF.
func callRawClose(s *tools.Server, raw []byte) error {
	guest, sup := net.Pipe()
	go s.ServeGuestStream(gateway.GuestStream{ConversationID: "conv-1"}, sup)
	if _, err := guest.Write(raw); err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond)
	return guest.Close()
}
