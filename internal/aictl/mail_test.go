package aictl

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/mailbox"
	"aicli.dev/aicli/internal/mailbox/mailapi"
	"aicli.dev/aicli/internal/mailbox/mailwire"
	"aicli.dev/aicli/internal/postoffice"
	"aicli.dev/aicli/internal/storeclient"
)

// mailServer is the API with the mail endpoints and agents a and b of the
// default namespace, where only a may send to b.
func mailServer(t *testing.T) (string, *mailbox.Mailbox) {
	t.Helper()
	srv := apiservertest.New(t)
	mb, err := mailbox.Open(context.Background(), srv.Store, mailbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cl := storeclient.New(srv.Store)
	mailapi.Mount(srv.API, &postoffice.Office{Client: cl, Mailbox: mb})
	for name, peers := range map[string]*v1alpha1.PeerPolicy{
		"a": {SendTo: &v1alpha1.PeerSet{Agents: []string{"b"}}},
		"b": nil,
	} {
		if err := cl.Create(context.Background(), &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: v1alpha1.AgentSpec{Harness: "fake", Peers: peers}}); err != nil {
			t.Fatal(err)
		}
	}
	return srv.ServeUnix(t), mb
}

func TestMailSendInboxAck(t *testing.T) {
	url, mb := mailServer(t)
	r := aictl(t, url, "mail", "send", "--from", "a", "--to", "b", "hello b")
	wantCode(t, r, 0)
	if !strings.HasPrefix(r.out, "mail ") || !strings.HasSuffix(r.out, " sent from a to b\n") {
		t.Fatalf("send: %q", r.out)
	}
	r = aictlIn(t, t.Context(), url, "line one\tx\nline two\n", "mail", "send", "--from", "a", "--to", "b", "-")
	wantCode(t, r, 0)

	r = aictl(t, url, "mail", "inbox", "b", "--unread")
	wantCode(t, r, 0)
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "SEQ") || !strings.Contains(lines[0], "FROM") ||
		!strings.HasSuffix(lines[1], "hello b") || !strings.HasSuffix(lines[2], "line one x …") {
		t.Fatalf("inbox table:\n%s", r.out)
	}

	r = aictl(t, url, "mail", "inbox", "b", "-o", "json")
	wantCode(t, r, 0)
	var in mailwire.Inbox
	if err := json.Unmarshal([]byte(r.out), &in); err != nil || len(in.Items) != 2 || in.Unread != 2 ||
		in.Items[1].Body != "line one\tx\nline two" {
		t.Fatalf("json %+v %v", in, err)
	}

	r = aictl(t, url, "mail", "inbox", "b", "--unread", "--limit", "1", "--ack")
	wantCode(t, r, 0)
	if !strings.Contains(r.out, "hello b") || !strings.Contains(r.out, "marked read up to") || !strings.Contains(r.out, "; 1 unread") ||
		!strings.Contains(r.err, "more mail follows: --after") {
		t.Fatalf("inbox --ack: %+v", r)
	}
	if n, _ := mb.Unread(context.Background(), "default", "b"); n != 1 {
		t.Fatalf("unread %d after acking one", n)
	}
	r = aictl(t, url, "mail", "inbox", "b", "--unread", "--ack")
	wantCode(t, r, 0)
	r = aictl(t, url, "mail", "inbox", "b", "--unread")
	wantCode(t, r, 0)
	if r.out != "" || !strings.Contains(r.err, "No unread mail for agent b.") {
		t.Fatalf("empty inbox: %+v", r)
	}
}

func TestMailErrorsAreClear(t *testing.T) {
	url, _ := mailServer(t)
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"mail", "send", "--from", "b", "--to", "a", "hi"}, "",
			`Error from server (Forbidden): mail send: agent "b" may not send mail to "a": missing permission: "b"'s spec.peers.sendTo does not include "a"`},
		{[]string{"mail", "send", "--from", "a", "--to", "ghost", "hi"}, "", `(NotFound): mail send: mail from a: recipient agent "ghost" does not exist`},
		{[]string{"mail", "send", "--from", "a", "--to", "other/b", "hi"}, "", "mail stays within one namespace"},
		{[]string{"mail", "send", "--from", "a", "--to", "b", " "}, "", "body is empty; nothing was sent"},
		{[]string{"mail", "send", "--from", "a", "--to", "b", "-"}, strings.Repeat("x", mailbox.MaxBodyBytes+1), "exceeds 65536 bytes (64 KiB)"},
		{[]string{"mail", "send", "--to", "b", "hi"}, "", "give both --from AGENT and --to AGENT"},
		{[]string{"mail", "inbox", "ghost"}, "", `agent "ghost" does not exist`},
		{[]string{"mail", "inbox", "b", "--limit", "5000"}, "", "--limit must be 1 to 1000"},
	} {
		r := aictlIn(t, t.Context(), url, tc.stdin, tc.args...)
		if r.code != 1 || !strings.Contains(r.err, tc.want) {
			t.Errorf("%v: code %d, stderr %q, want it to contain %q", tc.args, r.code, r.err, tc.want)
		}
	}
}
