package aictl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/convapi/convapitest"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

func desiredOf(t *testing.T, env *convapitest.Env, ns, name string) string {
	t.Helper()
	obj, err := env.Store.Get(context.Background(), "conversations", ns, name)
	if err != nil {
		t.Fatal(err)
	}
	d, _, _ := unstructured.NestedString(obj.Object, "spec", "desiredState")
	return d
}

func TestStartCommand(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "team", "coder")

	r := aictl(t, env.URL, "start", "coder", "-n", "team")
	wantCode(t, r, 0)
	names := env.Conversations(t, "team", "coder")
	if len(names) != 1 {
		t.Fatalf("conversations after start = %v", names)
	}
	if !strings.Contains(r.out, "NAME") || !strings.Contains(r.out, "AGENT") || !strings.Contains(r.out, names[0]+"   ") ||
		!strings.Contains(r.out, "conversation.aicli.dev/"+names[0]+" started") {
		t.Errorf("start output:\n%s", r.out)
	}

	r = aictl(t, env.URL, "start", "coder", "-n", "team", "-o", "name")
	wantCode(t, r, 0)
	if r.out != "conversation.aicli.dev/"+names[0]+"\n" || !strings.Contains(r.err, "continued") {
		t.Errorf("second start: out %q err %q, want the same conversation, continued", r.out, r.err)
	}
	if n := env.Conversations(t, "team", "coder"); len(n) != 1 {
		t.Errorf("a second start created another conversation: %v", n)
	}

	r = aictl(t, env.URL, "start", "ghost")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "Error from server (NotFound)") || !strings.Contains(r.err, "ghost") {
		t.Errorf("start of a missing agent: %q", r.err)
	}
	r = aictl(t, env.URL, "start", "coder", "-n", "team", "-o", "toml")
	wantCode(t, r, 1)
}

func TestDesiredStateCommands(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)

	r := aictl(t, env.URL, "pause", "c1")
	wantCode(t, r, 0)
	if r.out != "conversation.aicli.dev/c1 desired state: Paused\n" || desiredOf(t, env, "default", "c1") != "Paused" {
		t.Errorf("pause: %q, stored %s", r.out, desiredOf(t, env, "default", "c1"))
	}
	// While c1 is paused another conversation becomes the live one; resuming
	// c1 must then be refused by admission, naming the live one.
	env.CreateConversation(t, "default", "c2", "coder", v1alpha1.ConversationActive)
	r = aictl(t, env.URL, "resume", "conversation/c1")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "Conflict") || !strings.Contains(r.err, `"c2"`) {
		t.Errorf("resume with another live conversation: %q", r.err)
	}
	wantCode(t, aictl(t, env.URL, "archive", "conv/c2"), 0)
	r = aictl(t, env.URL, "resume", "c1")
	wantCode(t, r, 0)
	if r.out != "conversation.aicli.dev/c1 desired state: Active\n" || desiredOf(t, env, "default", "c1") != "Active" {
		t.Errorf("resume: %q", r.out)
	}
	if desiredOf(t, env, "default", "c2") != "Archived" {
		t.Errorf("archive did not store Archived")
	}
	r = aictl(t, env.URL, "pause", "agent/coder")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "does not name a conversation") {
		t.Errorf("pause agent/coder: %q", r.err)
	}
	r = aictl(t, env.URL, "pause", "ghost")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "NotFound") {
		t.Errorf("pause ghost: %q", r.err)
	}
}

func TestSendCommand(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)
	env.CreateConversation(t, "default", "p1", "coder", v1alpha1.ConversationPaused)
	pty := env.Live(t, "default", "c1")
	file := writeFile(t, t.TempDir(), "prompt.md", "from a file\nwith two lines\n")

	wantCode(t, aictl(t, env.URL, "send", "c1", "hello", "world"), 0)
	wantCode(t, aictl(t, env.URL, "send", "c1", "-f", file), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := aictlIn(t, ctx, env.URL, "piped \"text\"", "send", "c1", "-f", "-")
	wantCode(t, r, 0)
	if !strings.Contains(r.err, "accepted") {
		t.Errorf("send did not report acceptance: %q", r.err)
	}
	want := []string{"hello world", "from a file\nwith two lines\n", "piped \"text\""}
	if got := pty.Messages(); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("guest got %q, want %q", got, want)
	}

	r = aictl(t, env.URL, "send", "p1", "hi")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "Error from server (Conflict)") || !strings.Contains(r.err, "p1 is Paused: resume it first (aictl resume p1)") {
		t.Errorf("send to paused: %q", r.err)
	}
	big := writeFile(t, t.TempDir(), "big.txt", strings.Repeat("x", ptyapi.MaxMessageBytes+10))
	r = aictl(t, env.URL, "send", "c1", "-f", big)
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "RequestEntityTooLarge") || !strings.Contains(r.err, "exceeds") {
		t.Errorf("send too large: %q", r.err)
	}
	wantCode(t, aictl(t, env.URL, "send", "c1"), 1)
	wantCode(t, aictl(t, env.URL, "send", "c1", "text", "-f", file), 1)
	if n := len(pty.Messages()); n != 3 {
		t.Errorf("refused sends reached the guest: %d messages", n)
	}
}

func TestScreenCommand(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)
	pty := env.Live(t, "default", "c1")
	pty.SetScreen(ptyapi.Screen{Cols: 10, Rows: 2, Lines: []string{"fake> hi  ", "footer"}})
	r := aictl(t, env.URL, "screen", "c1")
	wantCode(t, r, 0)
	if r.out != "fake> hi\nfooter\n" {
		t.Errorf("screen text = %q", r.out)
	}
	r = aictl(t, env.URL, "screen", "c1", "-o", "json")
	wantCode(t, r, 0)
	var scr ptyapi.Screen
	if err := json.Unmarshal([]byte(r.out), &scr); err != nil || scr.Cols != 10 || scr.Lines[1] != "footer" {
		t.Errorf("screen json = %q (%v)", r.out, err)
	}
}

func TestTranscriptCommand(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationPaused)
	uid := env.UID(t, "default", "c1")
	env.Transcripts.Append(uid, transcriptwire.SpeakerHuman, "hi")
	env.Transcripts.Append(uid, transcriptwire.SpeakerAgent, "fake[turn 1]: hi\nsecond line")
	env.Transcripts.Append(uid, "injected:watcher", "look at the tests")

	r := aictl(t, env.URL, "transcript", "c1")
	wantCode(t, r, 0)
	want := "[1] human: hi\n[2] agent: fake[turn 1]: hi\n    second line\n[3] injected:watcher: look at the tests\n"
	if r.out != want {
		t.Errorf("transcript =\n%s\nwant\n%s", r.out, want)
	}
	r = aictl(t, env.URL, "transcript", "c1", "--from", "3", "-o", "json")
	wantCode(t, r, 0)
	var e transcriptwire.Entry
	if err := json.Unmarshal([]byte(r.out), &e); err != nil || e.Cursor != 3 || e.Speaker != "injected:watcher" {
		t.Errorf("json transcript from 3 = %q (%v)", r.out, err)
	}
	wantCode(t, aictl(t, env.URL, "transcript", "c1", "-o", "yaml"), 1)
}

// transcript -f prints the backlog from --from, then live entries, and
// resumes after the server ends its stream without repeating a line.
func TestTranscriptFollowCommand(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)
	uid := env.UID(t, "default", "c1")
	for i := 1; i <= 3; i++ {
		env.Transcripts.Append(uid, transcriptwire.SpeakerHuman, fmt.Sprintf("m%d", i))
	}
	env.Transcripts.CutSubscriptionsAfter(2)

	out, stop, wait := started(t, env.URL, "transcript", "c1", "-f", "--from", "2")
	eventually(t, "the backlog from cursor 2 is printed", func() bool {
		return strings.Contains(out.String(), "[3] human: m3")
	})
	for i := 4; i <= 7; i++ {
		env.Transcripts.Append(uid, transcriptwire.SpeakerAgent, fmt.Sprintf("m%d", i))
	}
	eventually(t, "live entries are printed", func() bool { return strings.Contains(out.String(), "[7] agent: m7") })
	stop()
	r := wait()
	wantCode(t, r, 0)
	want := "[2] human: m2\n[3] human: m3\n[4] agent: m4\n[5] agent: m5\n[6] agent: m6\n[7] agent: m7\n"
	if r.out != want {
		t.Errorf("followed transcript =\n%s\nwant\n%s", r.out, want)
	}
	if n := env.Transcripts.Subscriptions(); n < 3 {
		t.Errorf("%d subscriptions: the command did not resume after the server ended the stream", n)
	}
}

// attachRun runs aictl attach with a pipe as its terminal input.
func attachRun(t *testing.T, server string, args ...string) (keys *io.PipeWriter, out, errOut *syncBuffer, done <-chan int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.Close() })
	out, errOut = &syncBuffer{}, &syncBuffer{}
	ch := make(chan int, 1)
	go func() {
		ch <- Run(ctx, append([]string{"--server", server, "attach"}, args...), IOStreams{In: pr, Out: out, ErrOut: errOut})
	}()
	return pw, out, errOut, ch
}

func exitCode(t *testing.T, done <-chan int) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(15 * time.Second):
		t.Fatal("aictl attach did not finish")
		return -1
	}
}

func TestAttachCommandDetach(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)
	pty := env.Live(t, "default", "c1")

	keys, out, errOut, done := attachRun(t, env.URL, "c1")
	eventually(t, "attached with a hint", func() bool {
		return strings.Contains(errOut.String(), "Detach with Ctrl-]") && pty.Subscribers() == 1
	})
	eventually(t, "the screen is repainted", func() bool { return strings.Contains(out.String(), "? for shortcuts") })
	pty.Output([]byte("\x1b[1mfake[turn 1]: hi\x1b[0m\r\n"))
	eventually(t, "raw output reaches the terminal", func() bool {
		return strings.Contains(out.String(), "\x1b[1mfake[turn 1]: hi\x1b[0m\r\n")
	})
	if _, err := keys.Write([]byte("ls -l\r")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "keystrokes reach the PTY", func() bool { return pty.Keystrokes() == "ls -l\r" })
	// Ctrl-] detaches; what follows it in the same read is not sent.
	if _, err := keys.Write([]byte("x\x1dnot sent")); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, done); code != 0 {
		t.Fatalf("attach exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "Detached from conversation c1") {
		t.Errorf("no detach message: %q", errOut.String())
	}
	if got := pty.Keystrokes(); got != "ls -l\rx" {
		t.Errorf("keystrokes = %q, want %q", got, "ls -l\rx")
	}
	eventually(t, "the server let go of the PTY", func() bool { return pty.Subscribers() == 0 })
}

func TestAttachCommandServerEnds(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)
	pty := env.Live(t, "default", "c1")
	_, _, errOut, done := attachRun(t, env.URL, "c1")
	eventually(t, "attached", func() bool { return pty.Subscribers() == 1 })
	pty.EndOutput()
	if code := exitCode(t, done); code != 0 {
		t.Fatalf("attach exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "closed: the conversation's output ended") {
		t.Errorf("stderr %q", errOut.String())
	}
}

func TestAttachCommandRefused(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "p1", "coder", v1alpha1.ConversationPaused)
	_, _, errOut, done := attachRun(t, env.URL, "p1")
	if code := exitCode(t, done); code != 1 {
		t.Fatalf("attach to paused exit %d", code)
	}
	if !strings.Contains(errOut.String(), "Error from server (Conflict)") || !strings.Contains(errOut.String(), "p1 is Paused: resume it first") {
		t.Errorf("stderr %q", errOut.String())
	}
}

// The commands work over the supervisor's real transports: the local unix
// socket and TLS with a bearer token (attach sends the token on the
// websocket handshake; a wrong token is refused before any upgrade).
func TestConversationCommandsOverUnixAndTLS(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	unix := env.ServeUnix(t)
	r := aictl(t, unix, "start", "coder", "-o", "name")
	wantCode(t, r, 0)
	name := strings.TrimPrefix(strings.TrimSpace(r.out), "conversation.aicli.dev/")
	pty := env.Live(t, "default", name)
	wantCode(t, aictl(t, unix, "send", name, "over", "unix"), 0)
	keys, out, errOut, done := attachRun(t, unix, name)
	eventually(t, "attached over unix", func() bool { return strings.Contains(out.String(), "? for shortcuts") })
	if _, err := keys.Write([]byte("u\x1d")); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, done); code != 0 {
		t.Fatalf("attach over unix exit %d: %s", code, errOut.String())
	}

	const token = "s3cret-token"
	tlsURL, ca := env.ServeTLS(t, token)
	wantCode(t, aictl(t, tlsURL, "--token", token, "--certificate-authority", ca, "send", name, "over", "tls"), 0)
	keys, out, errOut, done = attachRun(t, tlsURL, "--token", token, "--certificate-authority", ca, name)
	eventually(t, "attached over TLS", func() bool { return strings.Contains(out.String(), "? for shortcuts") })
	if _, err := keys.Write([]byte("t\x1d")); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, done); code != 0 {
		t.Fatalf("attach over TLS exit %d: %s", code, errOut.String())
	}
	_, _, errOut, done = attachRun(t, tlsURL, "--token", "wrong", "--certificate-authority", ca, name)
	if code := exitCode(t, done); code != 1 || !strings.Contains(errOut.String(), "Unauthorized") {
		t.Errorf("attach with a wrong token: exit %d, %q", code, errOut.String())
	}

	if got := fmt.Sprintf("%q", pty.Messages()); got != `["over unix" "over tls"]` {
		t.Errorf("messages = %s", got)
	}
	if got := pty.Keystrokes(); got != "ut" {
		t.Errorf("keystrokes = %q, want %q", got, "ut")
	}
}
