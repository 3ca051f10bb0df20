package tools_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/ptyclient"
	"aicli.dev/aicli/guest/server"
	"aicli.dev/aicli/guest/sidechannel"
	"aicli.dev/aicli/guest/sidechannel/wire"
	"aicli.dev/aicli/guest/toolrelay"
	"aicli.dev/aicli/guest/toolwire"
	"aicli.dev/aicli/internal/gateway"
	"aicli.dev/aicli/internal/gateway/gatewaytest"
	"aicli.dev/aicli/internal/tools"
)

// stack is a real gateway with a real guest session: the guest's relay socket, its side channel and the
// supervisor's stream router and tool server, all in-process.
type stack struct {
	socket string
	auth   *fakeAuth
	guest  *gateway.GuestConn
}

// closeHandler closes every stream (no egress in these tests).
type closeHandler struct{}

func (closeHandler) ServeGuestStream(_ gateway.GuestStream, st net.Conn) { _ = st.Close() }

// fingerprintAuth refuses calls presented on another guest key than the one it expects.
type fingerprintAuth struct {
	*fakeAuth
	want *string
}

func (f fingerprintAuth) Authorize(ctx context.Context, c tools.Caller, r toolwire.Request) (*tools.Authorization, error) {
	if c.GuestFingerprint != *f.want || c.ConversationUID != "conv-it" {
		return nil, &tools.Refusal{Reason: "holder", Message: "presented on another connection"}
	}
	return f.fakeAuth.Authorize(ctx, c, r)
}

func newStack(tb testing.TB, auth *fakeAuth, mod ...func(*tools.Options)) *stack {
	tb.Helper()
	quiet := slog.New(slog.DiscardHandler)
	dir, err := os.MkdirTemp("", "tl")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	var fp string
	opts := tools.Options{Authorizer: fingerprintAuth{auth, &fp}, Logger: quiet}
	for _, m := range mod {
		m(&opts)
	}
	ts, err := tools.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ts.Close() })
	g, err := gateway.New(gateway.Options{DataDir: filepath.Join(dir, "d"), Tokens: gatewaytest.NewTokens(), Logger: quiet,
		GuestStreams: &gateway.StreamRouter{Egress: closeHandler{}, Tools: ts}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = g.Close() })
	l, err := g.Prepare(context.Background(), "conv-it")
	if err != nil {
		tb.Fatal(err)
	}
	out := &sidechannel.Outbound{}
	boot := sidechannel.Bootstrap{SocketPath: l.HostSocket, SupervisorFingerprint: g.Fingerprint(),
		ConversationID: "conv-it", LaunchToken: l.Env[wire.EnvLaunchToken], Outbound: out}
	relay, err := toolrelay.Listen(toolrelay.Options{Streams: out, Socket: filepath.Join(dir, "t", "tool.sock"), Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{}, 2)
	go func() {
		_ = sidechannel.Serve(ctx, boot, server.NewHandler(nil, quiet, server.WithCapabilities(relay)), quiet)
		served <- struct{}{}
	}()
	go func() { _ = relay.Serve(ctx); served <- struct{}{} }()
	tb.Cleanup(func() { cancel(); <-served; <-served })
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	gc, err := g.WaitGuest(wctx, "conv-it")
	if err != nil {
		tb.Fatal(err)
	}
	fp = gc.GuestFingerprint()
	// The supervisor pushes the capabilities over the guest API, as the integrator's lease loop will.
	caps := ptyapi.Capabilities{}
	for name := range auth.tools {
		caps.Tools = append(caps.Tools, ptyapi.ToolCap{Name: name, Token: "good"})
	}
	caps.Tools = append(caps.Tools, ptyapi.ToolCap{Name: "forged", Token: "bad"})
	if err := ptyclient.New(gc.HTTPClient(), gateway.BaseURL).SetCapabilities(wctx, caps); err != nil {
		tb.Fatal(err)
	}
	return &stack{socket: relay.Addr(), auth: auth, guest: gc}
}

// buildTool builds aicli-tool into a temporary directory with symlinks for names.
func buildTool(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "aicli-tool"), "aicli.dev/aicli/cmd/aicli-tool")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build aicli-tool: %v\n%s", err, out)
	}
	for _, n := range names {
		if err := os.Symlink("aicli-tool", filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestEndToEnd: aicli-tool invoked through a symlink → the guest relay → a real side-channel session through the
// gateway's router → the tool server → a host process, and its output and exit code back.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds aicli-tool")
	}
	greet := execTool("greet", "sh", "-c", `printf 'hello %s, ' "$1"; cat; printf 'key %s\n' "$K" >&2; exit 5`, "greet")
	greet.Tool.SecretRefs = []v1alpha1.SecretRef{{Name: "k", Env: "K"}}
	greet.Secrets = map[string][]byte{"k": []byte("topsecret")}
	greet.Tool.Usage = "greet NAME: says hello"
	st := newStack(t, &fakeAuth{tools: map[string]*tools.Authorization{"greet": greet}})
	bin := buildTool(t, "greet", "nope", "forged")
	run := func(name, stdin string, args ...string) (string, string, int) {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Env = []string{toolwire.EnvSocket + "=" + st.socket}
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	if out, errs, code := run("greet", "from stdin", "world"); code != 5 || out != "hello world, from stdin" || errs != "key [REDACTED]\n" {
		t.Fatalf("greet: code %d stdout %q stderr %q", code, out, errs)
	}
	if out, _, code := run("greet", "", "--help"); code != 0 || out != "greet NAME: says hello\n" {
		t.Fatalf("greet --help: %d %q", code, out)
	}
	if _, errs, code := run("nope", ""); code != toolwire.ExitNotGranted || !strings.Contains(errs, "not granted") {
		t.Fatalf("nope: %d %q", code, errs)
	}
	if _, errs, code := run("forged", ""); code != toolwire.ExitRefused || !strings.Contains(errs, "invalid_token") {
		t.Fatalf("forged: %d %q", code, errs)
	}
	if out, _, code := run("aicli-tool", "", "greet", "again"); code != 5 || !strings.HasPrefix(out, "hello again") {
		t.Fatalf("aicli-tool greet: %d %q", code, out)
	}
}

// relayCall makes one call through the relay socket, as aicli-tool does, and returns the exit code.
func relayCall(tb testing.TB, socket, tool string, args ...string) int {
	c, err := net.Dial("unix", socket)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if err := toolwire.WriteJSON(c, toolwire.TypeRequest, toolwire.Request{Op: toolwire.OpCall, Tool: tool, Args: args}); err != nil {
		tb.Fatal(err)
	}
	if err := toolwire.WriteFrame(c, toolwire.TypeStdinEOF, nil); err != nil {
		tb.Fatal(err)
	}
	r := readResult(c)
	if r.err != nil {
		tb.Fatal(r.err)
	}
	_, _ = io.Copy(io.Discard, c)
	return r.exit.Code
}
