package aictl

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/convapi/convapitest"
)

// goLive makes conversation ns/name live as the supervisor does: its guest
// connects (a fake PTY) and the controller writes Ready=True.
func goLive(t *testing.T, env *convapitest.Env, ns, name string) *convapitest.PTY {
	t.Helper()
	pty := env.Live(t, ns, name)
	env.SetReady(t, ns, name, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "all dependencies are ready")
	return pty
}

// pauseAsController is the controller's unplanned pause: desired Paused
// first, then Ready False in its status write.
func pauseAsController(t *testing.T, env *convapitest.Env, ns, name string) {
	t.Helper()
	env.Server.Mutate(t, "conversations", ns, name, func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, string(v1alpha1.ConversationPaused), "spec", "desiredState")
	})
	env.SetReady(t, ns, name, metav1.ConditionFalse, "UnplannedPause", "the CLI exited with code 1")
}

// aictl start --wait X && aictl send C hi works on the first try: start waits
// until the conversation is live and prints only its name.
func TestStartWaitPrintsTheNameOnceLive(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	out, _, wait := started(t, env.URL, "start", "--wait", "coder")
	var name string
	eventually(t, "start created the conversation", func() bool {
		names := env.Conversations(t, "default", "coder")
		if len(names) == 1 {
			name = names[0]
		}
		return name != ""
	})
	eventually(t, "start watches the conversation", func() bool { return env.Server.Watches() == 1 })
	if out.String() != "" {
		t.Fatalf("start --wait printed before the conversation was live: %q", out.String())
	}
	pty := goLive(t, env, "default", name)
	r := wait()
	wantCode(t, r, 0)
	if r.out != name+"\n" {
		t.Fatalf("stdout %q, want only the name %q", r.out, name)
	}
	if !strings.Contains(r.err, "conversation.aicli.dev/"+name+" started; waiting up to 2m0s for it to be live") ||
		!strings.Contains(r.err, "conversation.aicli.dev/"+name+" is live") {
		t.Errorf("stderr %q", r.err)
	}
	wantCode(t, aictl(t, env.URL, "send", strings.TrimSpace(r.out), "hi"), 0)
	if got := pty.Messages(); len(got) != 1 || got[0] != "hi" {
		t.Errorf("guest got %q", got)
	}

	// A live conversation is continued and returned at once; -o prints the
	// live object instead of the name.
	r = aictl(t, env.URL, "start", "coder", "--wait=5s", "-o", "json")
	wantCode(t, r, 0)
	var obj map[string]any
	if err := json.Unmarshal([]byte(r.out), &obj); err != nil || obj["kind"] != "Conversation" {
		t.Fatalf("start --wait -o json: %v\n%s", err, r.out)
	}
	if !strings.Contains(r.err, name+" continued; waiting up to 5s") {
		t.Errorf("stderr %q", r.err)
	}
}

func TestStartWaitTimesOutNamingTheReadyReason(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "team", "coder")
	env.CreateConversation(t, "team", "c1", "coder", v1alpha1.ConversationActive)
	env.SetReady(t, "team", "c1", metav1.ConditionFalse, "WaitingForGuest", "waiting for the guest to dial in")

	r := aictl(t, env.URL, "start", "coder", "-n", "team", "--wait=300ms")
	wantCode(t, r, 1)
	want := "error: start coder: timed out after 300ms waiting for conversation c1 to be live (Ready=True for generation 1); " +
		"Ready is False (WaitingForGuest): waiting for the guest to dial in (see 'aictl describe conversation c1 -n team')\n"
	if r.out != "" || !strings.HasSuffix(r.err, want) {
		t.Fatalf("stdout %q\nstderr %q\nwant suffix %q", r.out, r.err, want)
	}

	// Without any Ready yet, the message says so.
	env.CreateAgent(t, "team", "fresh")
	r = aictl(t, env.URL, "start", "fresh", "-n", "team", "--wait=200ms")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "to be live (Ready=True for generation 1); Ready is not reported yet") {
		t.Fatalf("stderr %q", r.err)
	}
}

func TestStartWaitBadInput(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	for args, want := range map[string]string{
		"start coder --wait=soon":  `invalid argument "soon" for "--wait" flag: "soon" is not a duration such as 90s or 5m`,
		"start coder --wait=0s":    `invalid argument "0s" for "--wait" flag: "0s": the timeout must be positive`,
		"start coder --wait=-1m":   `invalid argument "-1m" for "--wait" flag: "-1m": the timeout must be positive`,
		"start coder --wait 30s":   "--wait takes its timeout after an equals sign: --wait=30s",
		"start --wait ghost":       `Error from server (NotFound): start ghost: agents.aicli.dev "ghost" not found`,
		"start coder --wait -o no": `unknown output format "no"`,
	} {
		r := aictl(t, env.URL, strings.Fields(args)...)
		if r.code != 1 || !strings.Contains(r.err, want) {
			t.Errorf("aictl %s: code %d stderr %q, want %q", args, r.code, r.err, want)
		}
	}
	if n := env.Conversations(t, "default", "coder"); len(n) != 0 {
		t.Errorf("bad input started conversations: %v", n)
	}
}

// send to a conversation that is starting waits until it is live, through
// the watch, and delivers then.
func TestSendWaitsForAStartingConversation(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)
	_, _, wait := started(t, env.URL, "send", "c1", "hello")
	eventually(t, "send waits on the watch", func() bool { return env.Server.Watches() == 1 })
	pty := goLive(t, env, "default", "c1")
	r := wait()
	wantCode(t, r, 0)
	if !strings.Contains(r.err, "conversation c1 is not live yet (Ready is not reported yet); waiting up to 2m0s\n") ||
		!strings.HasSuffix(r.err, "message accepted by conversation c1\n") {
		t.Errorf("stderr %q", r.err)
	}
	if got := pty.Messages(); len(got) != 1 || got[0] != "hello" {
		t.Errorf("guest got %q", got)
	}
	if n := env.Server.Requests("POST", "/apis/aicli.dev/v1alpha1/namespaces/default/conversations/c1/send"); n != 2 {
		t.Errorf("%d sends, want 2 (refused while starting, then delivered)", n)
	}
}

func TestSendTimesOutNamingTheReadyReason(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)
	env.SetReady(t, "default", "c1", metav1.ConditionFalse, "Building", "building image aicli-fake")
	r := aictl(t, env.URL, "send", "c1", "hi", "--timeout=300ms")
	wantCode(t, r, 1)
	if !strings.HasSuffix(r.err, "error: send to c1: timed out after 300ms waiting for conversation c1 to be live "+
		"(Ready=True for generation 1); Ready is False (Building): building image aicli-fake "+
		"(see 'aictl describe conversation c1')\n") {
		t.Fatalf("stderr %q", r.err)
	}
	// --timeout=0 fails at once with the server's answer.
	r = aictl(t, env.URL, "send", "c1", "hi", "--timeout=0")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "Error from server (Conflict): send to c1: conversation c1 is not live (desired Active") {
		t.Fatalf("--timeout=0: %q", r.err)
	}
}

// start --wait and send stop waiting when the supervisor pauses the
// conversation (its CLI exited), naming the command that resumes it.
func TestWaitsEndWhenTheConversationIsPaused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"start", "coder", "--wait=20s"}, "error: start coder: conversation c1 is Paused, not Active: it does not " +
			"become live on its own (Ready is False (Starting) for generation 1, not yet observed for 2: the CLI is starting): " +
			"resume it first (aictl resume c1)\n"},
		{[]string{"send", "c1", "hi", "--timeout=20s"},
			"Error from server (Conflict): send to c1: conversation c1 is Paused: resume it first (aictl resume c1)\n"},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			env := convapitest.Start(t)
			env.CreateAgent(t, "default", "coder")
			env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)
			env.SetReady(t, "default", "c1", metav1.ConditionFalse, "Starting", "the CLI is starting")
			_, _, wait := started(t, env.URL, c.args...)
			eventually(t, "the command waits on the watch", func() bool { return env.Server.Watches() == 1 })
			pauseAsController(t, env, "default", "c1")
			r := wait()
			wantCode(t, r, 1)
			if !strings.HasSuffix(r.err, c.want) {
				t.Fatalf("stderr %q\nwant suffix %q", r.err, c.want)
			}
		})
	}
}

func TestSendBadInput(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "p1", "coder", v1alpha1.ConversationPaused)
	env.CreateConversation(t, "default", "a1", "coder", v1alpha1.ConversationArchived)
	env.CreateAgent(t, "default", "needs-key")
	env.CreateConversation(t, "default", "s1", "needs-key", v1alpha1.ConversationActive)
	env.Server.Mutate(t, "conversations", "default", "s1", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(o.Object, []any{map[string]any{"type": v1alpha1.ConditionStalled, "status": "True",
			"reason": "SecretNotFound", "message": `secret "anthropic" does not exist`, "observedGeneration": int64(1),
			"lastTransitionTime": "2026-12-04T00:00:00Z"}}, "status", "conditions")
	})
	for args, want := range map[string]string{
		"send c1 hi --timeout=soon": `invalid argument "soon" for "--timeout" flag`,
		"send c1 hi --timeout=-1s":  "--timeout must not be negative, not -1s",
		"send ghost hi":             `Error from server (NotFound): send to ghost: conversations.aicli.dev "ghost" not found`,
		"send p1 hi":                "Error from server (Conflict): send to p1: conversation p1 is Paused: resume it first (aictl resume p1)",
		"send a1 hi": "Error from server (Conflict): send to a1: conversation a1 is Archived and read-only: " +
			"start a new conversation for agent coder (aictl start coder)",
		"send s1 hi": `error: send to s1: conversation s1 is stalled (SecretNotFound): secret "anthropic" does not exist`,
	} {
		r := aictl(t, env.URL, strings.Fields(args)...)
		if r.code != 1 || !strings.Contains(r.err, want) {
			t.Errorf("aictl %s: code %d stderr %q, want %q", args, r.code, r.err, want)
		}
	}
	// Paused, Archived and Stalled fail at once: nothing waited on a watch.
	if n := env.Server.Requests("GET", "/apis/aicli.dev/v1alpha1/namespaces/default/conversations"); n != 0 {
		t.Errorf("%d watches for conversations that cannot become live", n)
	}
}
