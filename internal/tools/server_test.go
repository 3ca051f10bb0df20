package tools_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/toolwire"
	"aicli.dev/aicli/internal/gateway"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/tools"
)

const secret = "s3cr3t-value-42"

func TestExecCalls(t *testing.T) {
	withSecret := execTool("showkey", "sh", "-c", `printf 'key=%s\n' "$API_KEY"`)
	withSecret.Tool.SecretRefs = []v1alpha1.SecretRef{{Name: "api", Env: "API_KEY"}}
	withSecret.Secrets = map[string][]byte{"api": []byte(secret)}
	split := execTool("split", "sh", "-c", `printf 'a s3cr3t-'; sleep 0.2; printf 'value-42 b'; printf 's3cr3t-val' >&2; sleep 0.2; printf 'ue-42' >&2`)
	split.Secrets = map[string][]byte{"api": []byte(secret)}
	auth := &fakeAuth{tools: map[string]*tools.Authorization{
		"exit7":   execTool("exit7", "sh", "-c", "exit 7"),
		"cat":     execTool("cat", "cat"),
		"echo":    execTool("echo", "echo"),
		"showkey": withSecret,
		"split":   split,
		"env":     execTool("env", "env"),
		"pwd":     execTool("pwd", "pwd"),
	}}
	s, rec := newServer(t, auth)
	cases := []struct {
		name, tool, stdin string
		args              []string
		code              int
		stdout, stderr    string
	}{
		{name: "exit code passthrough", tool: "exit7", code: 7},
		{name: "stdin to stdout", tool: "cat", stdin: "hello\x00world", stdout: "hello\x00world"},
		{name: "args", tool: "echo", args: []string{"--name=x", "y z"}, stdout: "--name=x y z\n"},
		{name: "secret in env, scrubbed", tool: "showkey", stdout: "key=[REDACTED]\n"},
		{name: "secret split across chunks", tool: "split", stdout: "a [REDACTED] b", stderr: "[REDACTED]"},
		{name: "big stdin", tool: "cat", stdin: strings.Repeat("x", 1<<20), stdout: strings.Repeat("x", 1<<20)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, s, tc.tool, tc.stdin, tc.args...)
			if r.err != nil || r.exit.Code != tc.code || r.stdout != tc.stdout || r.stderr != tc.stderr {
				t.Fatalf("got exit %+v err %v stdout %.80q stderr %q; want %d %.80q %q", r.exit, r.err, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
	t.Run("minimal environment", func(t *testing.T) {
		r := call(t, s, "env", "")
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			k, _, _ := strings.Cut(line, "=")
			switch k {
			case "PATH", "HOME", "TMPDIR", "LANG", "PWD", "SHLVL", "_":
			default:
				t.Errorf("unexpected variable in the backend's environment: %s", k)
			}
		}
	})
	t.Run("temp working dir", func(t *testing.T) {
		r := call(t, s, "pwd", "")
		if !strings.Contains(r.stdout, "aicli-tool-") {
			t.Errorf("working dir %q", r.stdout)
		}
	})
	if got := rec.snapshot(); len(got) < len(cases) || got[0].Caller.GuestFingerprint != "sha256:ab" || got[0].Auth == nil {
		t.Fatalf("records %+v", got)
	}
}

func TestTimeoutKillsBackend(t *testing.T) {
	a := execTool("hang", "sh", "-c", "sleep 100 & sleep 100")
	a.Tool.TimeoutSeconds = 1
	s, _ := newServer(t, &fakeAuth{tools: map[string]*tools.Authorization{"hang": a}})
	start := time.Now()
	r := call(t, s, "hang", "")
	if r.exit.Code != toolwire.ExitTimeout || !strings.Contains(r.exit.Message, "timed out") {
		t.Fatalf("exit %+v err %v", r.exit, r.err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("timeout took %v", d)
	}
}

func TestRefusals(t *testing.T) {
	auth := &fakeAuth{tools: map[string]*tools.Authorization{"cat": execTool("cat", "cat")}}
	s, rec := newServer(t, auth)
	bad := func(req toolwire.Request) []byte { return requestBytes(t, req) }
	cases := []struct {
		name    string
		raw     []byte
		refused string
	}{
		{"bad token", bad(toolwire.Request{Op: toolwire.OpCall, Tool: "cat", Token: "forged"}), "invalid_token"},
		{"too many args", bad(toolwire.Request{Op: toolwire.OpCall, Tool: "cat", Token: "good", Args: make([]string, toolwire.MaxArgs+1)}), toolwire.RefusedArgsTooLarge},
		{"args too large", bad(toolwire.Request{Op: toolwire.OpCall, Tool: "cat", Token: "good", Args: []string{strings.Repeat("a", toolwire.MaxArgBytes+1)}}), toolwire.RefusedArgsTooLarge},
		{"garbage header", []byte("GET / HTTP/1.1\r\n\r\n"), toolwire.RefusedMalformed},
		{"oversize frame", append(bad(toolwire.Request{Op: toolwire.OpCall, Tool: "cat"})[:13], 0xff, 0xff, 0xff, 0xff), toolwire.RefusedMalformed},
		{"no delegator", bad(toolwire.Request{Op: toolwire.OpDelegate, Tool: "cat", Token: "good", Delegate: &toolwire.DelegateArgs{Peer: "p"}}), toolwire.RefusedUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := callRaw(s, tc.raw, nil)
			if r.exit.Code != toolwire.ExitRefused || r.exit.Refused != tc.refused || r.exit.Message == "" {
				t.Fatalf("exit %+v err %v", r.exit, r.err)
			}
			// The server keeps serving.
			if ok := call(t, s, "cat", "still"); ok.stdout != "still" || ok.exit.Code != 0 {
				t.Fatalf("after a refusal: %+v", ok)
			}
		})
	}
	r := callRaw(s, bad(toolwire.Request{Op: toolwire.OpCall, Tool: "cat", Token: "forged"}), nil)
	if !strings.Contains(r.exit.Message, "invalid_token") {
		t.Errorf("refusal message %q does not name the reason", r.exit.Message)
	}
	var refused int
	for _, c := range rec.snapshot() {
		if c.Refused != "" {
			refused++
			if c.Auth != nil {
				t.Errorf("refused record with an authorization: %+v", c)
			}
		}
	}
	if refused < len(cases) {
		t.Errorf("%d refused records, want ≥ %d", refused, len(cases))
	}
}

func TestHelp(t *testing.T) {
	s, _ := newServer(t, &fakeAuth{tools: map[string]*tools.Authorization{"cat": execTool("cat", "cat")}})
	r := callRaw(s, requestBytes(t, toolwire.Request{Op: toolwire.OpHelp, Tool: "cat", Token: "good"}), nil)
	if r.exit.Code != 0 || r.stdout != "cat does things\n" {
		t.Fatalf("help: %+v", r)
	}
}

func TestOutputLimit(t *testing.T) {
	s, _ := newServer(t, &fakeAuth{tools: map[string]*tools.Authorization{
		"flood": execTool("flood", "sh", "-c", fmt.Sprintf("head -c %d /dev/zero; sleep 100", toolwire.MaxOutput+100)),
	}})
	r := call(t, s, "flood", "")
	if r.exit.Code != toolwire.ExitRefused || r.exit.Refused != toolwire.RefusedOutputLimit || len(r.stdout) != toolwire.MaxOutput || !strings.Contains(r.stderr, "truncated") {
		t.Fatalf("exit %+v stdout %d bytes stderr %q", r.exit, len(r.stdout), r.stderr)
	}
}

func TestStdinLimit(t *testing.T) {
	s, _ := newServer(t, &fakeAuth{tools: map[string]*tools.Authorization{"sink": execTool("sink", "sh", "-c", "cat >/dev/null")}})
	r := call(t, s, "sink", strings.Repeat("x", toolwire.MaxStdin+1))
	if r.exit.Code != toolwire.ExitRefused || r.exit.Refused != toolwire.RefusedStdinTooLarge {
		t.Fatalf("exit %+v err %v", r.exit, r.err)
	}
}

func TestHTTPBackend(t *testing.T) {
	var got struct {
		auth string
		body map[string]any
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.auth = r.Header.Get("Authorization")
		_ = json.NewDecoder(r.Body).Decode(&got.body)
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusTeapot)
		}
		_, _ = io.WriteString(w, "answer with "+secret)
	}))
	defer srv.Close()
	mk := func(path string) *tools.Authorization {
		return &tools.Authorization{Tool: grants.ResolvedTool{Name: "web",
			Backend:    v1alpha1.ToolBackend{HTTP: &v1alpha1.HTTPBackend{URL: srv.URL + path}},
			SecretRefs: []v1alpha1.SecretRef{{Name: "k", Header: "Authorization", Prefix: "Bearer "}}},
			Secrets: map[string][]byte{"k": []byte(secret)}}
	}
	s, _ := newServer(t, &fakeAuth{tools: map[string]*tools.Authorization{"web": mk("/ok"), "webfail": mk("/fail")}})
	r := call(t, s, "web", "in", "--q=1")
	if r.exit.Code != 0 || r.stdout != "answer with [REDACTED]" {
		t.Fatalf("http: %+v", r)
	}
	if got.auth != "Bearer "+secret || got.body["tool"] != "web" || got.body["stdin"] != "in" {
		t.Fatalf("backend saw %+v", got)
	}
	r = call(t, s, "webfail", "")
	if r.exit.Code != 1 || !strings.Contains(r.stderr, "418") {
		t.Fatalf("http failure: %+v", r)
	}
}

func TestConcurrentCalls(t *testing.T) {
	s, _ := newServer(t, &fakeAuth{tools: map[string]*tools.Authorization{"cat": execTool("cat", "cat")}})
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := fmt.Sprint("call-", i, strings.Repeat(".", 100_000))
			if r := call(t, s, "cat", in); r.stdout != in || r.exit.Code != 0 {
				errs <- fmt.Sprintf("call %d: exit %+v, %d bytes", i, r.exit, len(r.stdout))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestPerConversationLimit(t *testing.T) {
	s, _ := newServer(t, &fakeAuth{tools: map[string]*tools.Authorization{
		"hang": execTool("hang", "sh", "-c", "echo up; sleep 100"), "cat": execTool("cat", "cat")}},
		func(o *tools.Options) { o.MaxCallsPerConversation = 1 })
	guest, sup := net.Pipe()
	defer func() { _ = guest.Close() }()
	go s.ServeGuestStream(gateway.GuestStream{ConversationID: "conv-1"}, sup)
	go func() {
		_, _ = guest.Write(requestBytes(t, toolwire.Request{Op: toolwire.OpCall, Tool: "hang", Token: "good"}))
		_ = toolwire.WriteFrame(guest, toolwire.TypeStdinEOF, nil)
	}()
	if f, err := toolwire.ReadFrame(guest); err != nil || f.Type != toolwire.TypeStdout {
		t.Fatalf("hang did not start: %v %v", f.Type, err)
	}
	if r := call(t, s, "cat", "x"); r.exit.Refused != toolwire.RefusedTooManyCalls {
		t.Fatalf("second concurrent call not refused: %+v", r)
	}
	res := make(chan result, 1)
	go func() { res <- readResult(guest) }()
	_ = s.Close()
	if r := <-res; r.exit.Code != toolwire.ExitRefused {
		t.Fatalf("hanging call after Close: %+v", r)
	}
}

func TestCallerGoneKillsBackend(t *testing.T) {
	rec := &records{}
	s, err := tools.New(tools.Options{Authorizer: &fakeAuth{tools: map[string]*tools.Authorization{"hang": execTool("hang", "sleep", "100")}}, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	go func() {
		r := callRawClose(s, requestBytes(t, toolwire.Request{Op: toolwire.OpCall, Tool: "hang", Token: "good"}))
		_ = r
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(rec.snapshot()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the call did not end when its caller went away")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := rec.snapshot()[0]; r.ExitCode != -1 || r.Refused != "" || r.Auth == nil {
		t.Fatalf("record %+v", r)
	}
}

// gatedRecorder holds every Record until released, noting that it was called.
type gatedRecorder struct {
	called  chan tools.CallRecord
	release chan struct{}
}

func (g *gatedRecorder) Record(c tools.CallRecord) {
	g.called <- c
	<-g.release
}

// A caller that saw its exit code must find the call recorded even if the supervisor dies at that moment: the
// record is written before the exit goes out, for calls that ran, were refused or asked for help.
func TestCallRecordedBeforeTheCallerSeesItsExit(t *testing.T) {
	auth := &fakeAuth{tools: map[string]*tools.Authorization{"echo": execTool("echo", "/bin/echo", "hi")}}
	for _, req := range []toolwire.Request{
		{Op: toolwire.OpCall, Tool: "echo", Token: "good"},
		{Op: toolwire.OpCall, Tool: "echo", Token: "bad"},
		{Op: toolwire.OpHelp, Tool: "echo", Token: "good"},
	} {
		rec := &gatedRecorder{called: make(chan tools.CallRecord, 1), release: make(chan struct{})}
		s, _ := newServer(t, auth, func(o *tools.Options) { o.Recorder = rec })
		res := make(chan result, 1)
		go func() { res <- callRaw(s, requestBytes(t, req), nil) }()
		var r tools.CallRecord
		select {
		case r = <-rec.called:
		case got := <-res:
			t.Fatalf("%s %q: the caller got its exit (%+v) before the call was recorded", req.Op, req.Token, got.exit)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %q: the call was never recorded", req.Op, req.Token)
		}
		select {
		case got := <-res:
			t.Fatalf("%s %q: the caller got its exit (%+v) while the record was still being written", req.Op, req.Token, got.exit)
		case <-time.After(200 * time.Millisecond):
		}
		close(rec.release)
		got := <-res
		if got.err != nil || got.exit.Code != r.ExitCode {
			t.Fatalf("%s %q: caller saw %+v (err %v), record says exit %d", req.Op, req.Token, got.exit, got.err, r.ExitCode)
		}
	}
}
