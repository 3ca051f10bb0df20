package builtins

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/history"
	"aicli.dev/aicli/internal/mailbox"
	"aicli.dev/aicli/internal/postoffice"
	"aicli.dev/aicli/internal/recall"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/store/storetest"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/tools"
	"aicli.dev/aicli/internal/transcript"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

const ns = "team"

type env struct {
	t       *testing.T
	client  *storeclient.Client
	mail    *mailbox.Mailbox
	srv     *Server
	log     *transcript.StoreLog
	history *history.Index
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newEnv is a store with agents a (may mail b; recall bucket notes
// ReadWrite, facts Read; observes b's conversation b-1), b (may mail no one)
// and c, with real mailbox, recall and transcripts.
func newEnv(t *testing.T) *env {
	t.Helper()
	st := storetest.Open(t, store.Options{})
	c := storeclient.New(st)
	mb, err := mailbox.Open(ctxT(t), st, mailbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := recall.Open(st, t.TempDir(), recall.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Close() })
	ix, err := history.Open(ctxT(t), st, t.TempDir(), &history.StoreResolver{Store: st}, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	e := &env{t: t, client: c, mail: mb, log: &transcript.StoreLog{Store: st, Committed: ix.Committed}, history: ix}
	e.srv = &Server{Client: c, Office: &postoffice.Office{Client: c, Mailbox: mb}, Mailbox: mb, Recall: rc, Transcripts: e.log, History: ix}
	for name, peers := range map[string]*v1alpha1.PeerPolicy{
		"a": {SendTo: &v1alpha1.PeerSet{Agents: []string{"b"}}},
		"b": {},
		"c": nil,
	} {
		ag := &v1alpha1.Agent{Spec: v1alpha1.AgentSpec{Harness: "fake", Peers: peers}}
		ag.Namespace, ag.Name = ns, name
		e.create(ag)
	}
	g := &v1alpha1.Grant{Spec: v1alpha1.GrantSpec{Subject: "a",
		Recall:  []v1alpha1.BucketGrant{{Name: "notes", Access: v1alpha1.RecallReadWrite}, {Name: "facts", Access: v1alpha1.RecallRead}},
		Observe: []v1alpha1.TargetRef{{Agent: "b", Conversation: "b-1"}},
	}}
	g.Namespace, g.Name = ns, "a-memory"
	e.create(g)
	for _, cv := range [][2]string{{"a-1", "a"}, {"b-1", "b"}, {"b-2", "b"}} {
		conv := &v1alpha1.Conversation{Spec: v1alpha1.ConversationSpec{AgentRef: cv[1]}}
		conv.Namespace, conv.Name = ns, cv[0]
		e.create(conv)
	}
	return e
}

func (e *env) create(obj client.Object) {
	e.t.Helper()
	if err := e.client.Create(context.Background(), obj); err != nil {
		e.t.Fatal(err)
	}
}

// run calls tool as agent's conversation conv and returns its exit code and output.
func (e *env) run(agent, conv, stdin, tool string, args ...string) (int, string, string) {
	e.t.Helper()
	var out, errb bytes.Buffer
	auth := &tools.Authorization{Namespace: ns, Agent: agent, Conversation: conv, Grant: grants.BuiltinGrant,
		Tool: grants.ResolvedTool{Name: tool}, Args: args, Builtin: true}
	code, err := e.srv.Run(ctxT(e.t), auth, strings.NewReader(stdin), &out, &errb)
	if err != nil {
		e.t.Fatalf("%s %v: %v", tool, args, err)
	}
	return code, out.String(), errb.String()
}

func (e *env) unread(agent string) int {
	e.t.Helper()
	n, err := e.mail.Unread(context.Background(), ns, agent)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func TestMailSendInboxAck(t *testing.T) {
	e := newEnv(t)
	if code, out, errs := e.run("a", "a-1", "", "mail-send", "b", "hi", "there"); code != 0 || !strings.Contains(out, "sent to b") {
		t.Fatalf("send: %d %q %q", code, out, errs)
	}
	if code, _, errs := e.run("a", "a-1", "from stdin\n", "mail-send", "b"); code != 0 {
		t.Fatalf("send from stdin: %d %q", code, errs)
	}
	if n := e.unread("b"); n != 2 {
		t.Fatalf("b has %d unread", n)
	}
	code, out, _ := e.run("b", "b-1", "", "mail-inbox", "--unread", "--limit", "1", "--ack")
	if code != 0 || !strings.Contains(out, `from "a" (from conversation a-1):`+"\nhi there") || strings.Contains(out, "from stdin") ||
		!strings.Contains(out, "1 unread left") {
		t.Fatalf("inbox page 1: %d %q", code, out)
	}
	_, out, _ = e.run("b", "b-1", "", "mail-inbox", "--unread")
	if !strings.Contains(out, "from stdin\n") || strings.Contains(out, "hi there") {
		t.Fatalf("inbox page 2 = %q", out)
	}
	// Without --unread the newest messages show, read or not.
	if _, out, _ = e.run("b", "b-1", "", "mail-inbox"); !strings.Contains(out, "hi there") || !strings.Contains(out, "from stdin") {
		t.Fatalf("inbox all = %q", out)
	}
}

func TestMailSendRefusalsAppendNothing(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		from, stdin string
		args        []string
		code        int
		says        string
	}{
		{"b", "", []string{"a", "hi"}, exitRefused, `missing permission: "b"'s spec.peers.sendTo does not include "a"`},
		{"a", "", []string{"c", "hi"}, exitRefused, `"a"'s spec.peers.sendTo does not include "c"`},
		{"a", "", []string{"nobody", "hi"}, exitFailed, `recipient agent "nobody" does not exist`},
		{"a", "", []string{"other/b", "hi"}, exitRefused, "mail stays within one namespace"},
		{"a", "  \n", []string{"b"}, exitFailed, "body"},
		{"a", strings.Repeat("x", mailbox.MaxBodyBytes+1), []string{"b"}, exitFailed, "exceeds 65536 bytes"},
		{"a", "", []string{"b", strings.Repeat("y", mailbox.MaxBodyBytes+1)}, exitFailed, "the limit is 65536"},
		{"a", "", nil, exitUsage, "usage: mail-send PEER"},
	} {
		code, _, errs := e.run(tc.from, tc.from+"-1", tc.stdin, "mail-send", tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.says) {
			t.Errorf("%s mail-send %.40q: exit %d %q, want %d saying %q", tc.from, tc.args, code, errs, tc.code, tc.says)
		}
	}
	for _, who := range []string{"a", "b", "c"} {
		if n := e.unread(who); n != 0 {
			t.Errorf("%s has %d unread after refused sends", who, n)
		}
	}
	// Revoking the permission refuses the very next send.
	a := &v1alpha1.Agent{}
	if err := e.client.Get(context.Background(), ns, "a", a); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := e.run("a", "a-1", "", "mail-send", "b", "before"); code != 0 {
		t.Fatal("send before revocation failed")
	}
	a.Spec.Peers.SendTo.Agents = nil
	if err := e.client.Update(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := e.run("a", "a-1", "", "mail-send", "b", "after"); code != exitRefused || !strings.Contains(errs, "spec.peers.sendTo") {
		t.Fatalf("send after revocation: %d %q", code, errs)
	}
	if n := e.unread("b"); n != 1 {
		t.Fatalf("b has %d unread, want only the message sent before revocation", n)
	}
}

func TestMailPeers(t *testing.T) {
	e := newEnv(t)
	if _, out, _ := e.run("a", "a-1", "", "mail-peers"); out != "b\n" {
		t.Fatalf("a's peers = %q", out)
	}
	if _, out, _ := e.run("b", "b-1", "", "mail-peers"); !strings.Contains(out, "may not send mail to anyone") {
		t.Fatalf("b's peers = %q", out)
	}
}

func TestRememberAndRecall(t *testing.T) {
	e := newEnv(t)
	code, out, errs := e.run("a", "a-1", "The deploy runs on Tuesdays after the freeze.", "remember", "notes", "--title", "deploys", "--tag", "ops")
	if code != 0 || !strings.Contains(out, "remembered in notes as ") {
		t.Fatalf("remember: %d %q %q", code, out, errs)
	}
	e.run("a", "a-1", "", "remember", "notes", "lunch", "is", "at", "noon")
	code, out, _ = e.run("a", "a-1", "", "recall", "notes", "deploying", "--limit", "5")
	if code != 0 || !strings.Contains(out, "deploys") || strings.Contains(out, "lunch") {
		t.Fatalf("recall (stemmed) = %d %q", code, out)
	}
	if _, out, _ = e.run("a", "a-1", "", "recall", "notes", `"after the freeze"`); !strings.Contains(out, "deploys") {
		t.Fatalf("phrase recall = %q", out)
	}
	for _, tc := range []struct {
		agent string
		args  []string
		code  int
		says  string
	}{
		{"a", []string{"remember", "facts", "x"}, exitRefused, `granted Read, not ReadWrite`},
		{"a", []string{"recall", "secret", "x"}, exitRefused, `no Grant of agent "a" names recall bucket "secret"`},
		{"b", []string{"recall", "notes", "x"}, exitRefused, `no Grant of agent "b"`},
		{"a", []string{"recall", "notes", "deploy", `"unclosed`}, exitFailed, "malformed query at offset 7"},
		{"a", []string{"remember", "notes", strings.Repeat("z", recall.MaxBodyBytes+1)}, exitFailed, "over the limit"},
	} {
		code, _, errs := e.run(tc.agent, tc.agent+"-1", "", tc.args[0], tc.args[1:]...)
		if code != tc.code || !strings.Contains(errs, tc.says) {
			t.Errorf("%s %.40q: exit %d %q, want %d saying %q", tc.agent, tc.args, code, errs, tc.code, tc.says)
		}
	}
}

func TestTranscriptReadOwnAndObserved(t *testing.T) {
	e := newEnv(t)
	uid := func(name string) string {
		conv := &v1alpha1.Conversation{}
		if err := e.client.Get(context.Background(), ns, name, conv); err != nil {
			t.Fatal(err)
		}
		return string(conv.UID)
	}
	var entries []transcriptwire.Entry
	for i, sp := range []string{"human", "agent", "mail:a", "agent"} {
		entries = append(entries, transcriptwire.Entry{Speaker: sp, Text: "line " + string(rune('1'+i)), Time: time.Unix(1_800_000_000, 0)})
	}
	for _, c := range []string{"a-1", "b-1", "b-2"} {
		if _, err := e.log.Append(context.Background(), uid(c), entries); err != nil {
			t.Fatal(err)
		}
	}
	code, out, _ := e.run("a", "a-1", "", "transcript-read", "b-1", "--limit", "2")
	if code != 0 || !strings.Contains(out, "#1 2027-01-15 08:00:00Z human: line 1\n#2") || !strings.Contains(out, "--from 3") {
		t.Fatalf("read b-1 page 1: %d %q", code, out)
	}
	if _, out, _ = e.run("a", "a-1", "", "transcript-read", "b-1", "--from", "3"); !strings.Contains(out, "#3 ") || !strings.Contains(out, "mail:a: line 3") || strings.Contains(out, "#2 ") {
		t.Fatalf("read b-1 from 3 = %q", out)
	}
	if code, _, _ := e.run("a", "a-1", "", "transcript-read", "a-1"); code != 0 {
		t.Fatal("own conversation not readable")
	}
	for _, tc := range []struct{ agent, conv, says string }{
		{"a", "b-2", `belongs to agent "b", which no Grant of agent "a" lets it observe`},
		{"b", "a-1", `no Grant of agent "b"`},
	} {
		if code, _, errs := e.run(tc.agent, tc.agent+"-1", "", "transcript-read", tc.conv); code != exitRefused || !strings.Contains(errs, tc.says) {
			t.Errorf("%s reads %s: %d %q", tc.agent, tc.conv, code, errs)
		}
	}
	if code, _, errs := e.run("a", "a-1", "", "transcript-read", "nope"); code != exitFailed || !strings.Contains(errs, `"nope" does not exist`) {
		t.Fatalf("missing conversation: %d %q", code, errs)
	}
}

func TestParseArgs(t *testing.T) {
	spec := map[string]bool{"limit": true, "ack": false, "tag": true}
	a, err := parse([]string{"b", "--limit", "3", "x", "--ack", "--tag=t1", "--tag", "t2", "--", "--limit"}, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.pos, []string{"b", "x", "--limit"}) || a.str("limit") != "3" || !a.has("ack") ||
		!reflect.DeepEqual(a.flags["tag"], []string{"t1", "t2"}) {
		t.Fatalf("parsed %+v", a)
	}
	for _, bad := range [][]string{{"--nope"}, {"--limit"}, {"--ack=1"}} {
		if _, err := parse(bad, spec); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestTranscriptSearchOwnAndObserved(t *testing.T) {
	e := newEnv(t)
	at := time.Now().Add(-time.Hour)
	for conv, texts := range map[string][]string{
		"a-1": {"the deploy failed on tuesday", "lunch plans"},
		"b-1": {"deploying the database migration"},
		"b-2": {"deploy secrets for b only"},
	} {
		c := &v1alpha1.Conversation{}
		if err := e.client.Get(context.Background(), ns, conv, c); err != nil {
			t.Fatal(err)
		}
		var entries []transcriptwire.Entry
		for _, text := range texts {
			entries = append(entries, transcriptwire.Entry{Speaker: "human", Text: text, Time: at})
		}
		if _, err := e.log.Append(context.Background(), string(c.UID), entries); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.history.Flush(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	code, out, errs := e.run("a", "a-1", "", "transcript-search", "deploy")
	if code != 0 || !strings.Contains(out, "a-1 #1 ") || !strings.Contains(out, "b-1 #1 ") || strings.Contains(out, "b-2") {
		t.Fatalf("search deploy: %d %q %q", code, out, errs)
	}
	if _, out, _ = e.run("a", "a-1", "", "transcript-search", "deploy", "--agent", "b"); strings.Contains(out, "a-1") || !strings.Contains(out, "b-1") {
		t.Fatalf("--agent b = %q", out)
	}
	if _, out, _ = e.run("a", "a-1", "", "transcript-search", "deploy", "--since", "10m"); !strings.Contains(out, "nothing found") {
		t.Fatalf("--since 10m = %q", out)
	}
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"deploy", "--agent", "c"}, exitRefused, `lets it observe agent "c"`},
		{[]string{`"unclosed`}, exitFailed, "malformed query at offset 0"},
		{[]string{"x", "--since", "yesterday"}, exitUsage, "want a duration"},
		{nil, exitUsage, "usage: transcript-search"},
	} {
		if code, _, errs := e.run("a", "a-1", "", "transcript-search", tc.args...); code != tc.code || !strings.Contains(errs, tc.says) {
			t.Errorf("transcript-search %q: %d %q, want %d saying %q", tc.args, code, errs, tc.code, tc.says)
		}
	}
}

// advisor is an Advisor that refuses, fails or accepts by the text.
type advisor struct{ got []string }

type refused struct{ msg string }

func (r *refused) Error() string { return r.msg }
func (r *refused) Refused() bool { return true }

func (a *advisor) Advise(_ context.Context, ns, monitor, conv, text string) (string, error) {
	a.got = append(a.got, ns+"/"+monitor+"/"+conv+": "+text)
	switch text {
	case "refuse":
		return "", &refused{"refused: monitor attachment \"m\" is WatchOnly"}
	case "fail":
		return "", errors.New("boom")
	}
	return "advice delivered to w1", nil
}

func TestAdviseExitCodes(t *testing.T) {
	e := newEnv(t)
	adv := &advisor{}
	e.srv.Advisor = adv
	for _, tc := range []struct {
		stdin string
		args  []string
		code  int
		out   string
	}{
		{"", []string{"check", "the", "log"}, exitOK, "advice delivered to w1"},
		{"from stdin\n", nil, exitOK, "advice delivered"},
		{"", []string{"refuse"}, exitRefused, "is WatchOnly"},
		{"", []string{"fail"}, exitFailed, "boom"},
		{"", nil, exitUsage, "usage: advise"},
	} {
		code, out, errOut := e.run("a", "a-mon", tc.stdin, grants.Advise, tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.out) {
			t.Errorf("advise %v: %d %q %q", tc.args, code, out, errOut)
		}
	}
	if adv.got[0] != "team/a/a-mon: check the log" || adv.got[1] != "team/a/a-mon: from stdin" {
		t.Fatalf("advisor got %q", adv.got)
	}
}
