package tools_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"aicli.dev/aicli/guest/toolwire"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/tools"
)

// echoBuiltins answers with what it was given: the tool, caller, args and stdin.
type echoBuiltins struct{}

func (echoBuiltins) Run(_ context.Context, a *tools.Authorization, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	in, _ := io.ReadAll(stdin)
	fmt.Fprintf(stdout, "%s by %s/%s args=%s stdin=%s", a.Tool.Name, a.Agent, a.Conversation, strings.Join(a.Args, ","), in)
	fmt.Fprint(stderr, "note")
	return 3, nil
}

func builtinAuth(name string) *tools.Authorization {
	return &tools.Authorization{Namespace: "ns", Agent: "a", Conversation: "c", Grant: "@builtin",
		Tool: grants.ResolvedTool{Name: name, Usage: name + " usage"}, Builtin: true}
}

func TestBuiltinRunsInProcessWithStdinAndExitCode(t *testing.T) {
	auth := &fakeAuth{tools: map[string]*tools.Authorization{"mail-send": builtinAuth("mail-send")}}
	s, rec := newServer(t, auth, func(o *tools.Options) { o.Builtins = echoBuiltins{} })
	r := call(t, s, "mail-send", "body", "b", "x")
	if r.err != nil || r.exit.Code != 3 || r.stdout != "mail-send by a/c args=b,x stdin=body" || r.stderr != "note" {
		t.Fatalf("result %+v", r)
	}
	if h := callRaw(s, requestBytes(t, toolwire.Request{Op: toolwire.OpHelp, Tool: "mail-send", Token: "good"}), nil); h.stdout != "mail-send usage\n" {
		t.Fatalf("help = %q", h.stdout)
	}
	if recs := rec.snapshot(); len(recs) == 0 || recs[0].ExitCode != 3 || recs[0].BytesIn != int64(len("b")+len("x")+len("body")) {
		t.Fatalf("records %+v", recs)
	}
	// A server without built-ins fails such a call instead of running anything.
	bare, _ := newServer(t, auth)
	if r := call(t, bare, "mail-send", ""); r.exit.Code != 126 || !strings.Contains(r.exit.Message, "serves no built-in tools") {
		t.Fatalf("bare server: %+v", r)
	}
}
