package mailapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/mailbox"
	"aicli.dev/aicli/internal/mailbox/mailapi"
	"aicli.dev/aicli/internal/mailbox/mailwire"
	"aicli.dev/aicli/internal/postoffice"
	"aicli.dev/aicli/internal/storeclient"
)

const ns = "team"

type env struct {
	t   testing.TB
	srv *apiservertest.Server
	cl  *storeclient.Client
	mb  *mailbox.Mailbox
	url string
}

// serve mounts the mail endpoints on the real API server with agents a, b
// and c, where only a may send to b.
func serve(t testing.TB) *env {
	t.Helper()
	srv := apiservertest.New(t)
	mb, err := mailbox.Open(context.Background(), srv.Store, mailbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cl := storeclient.New(srv.Store)
	mailapi.Mount(srv.API, &postoffice.Office{Client: cl, Mailbox: mb})
	e := &env{t: t, srv: srv, cl: cl, mb: mb, url: srv.ServeLoopback(t, &apiserver.Principal{Name: "owner", Namespaces: []string{ns}})}
	e.agent("a", &v1alpha1.PeerPolicy{SendTo: &v1alpha1.PeerSet{Agents: []string{"b"}}})
	e.agent("b", nil)
	e.agent("c", nil)
	return e
}

func (e *env) agent(name string, peers *v1alpha1.PeerPolicy) {
	e.t.Helper()
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AgentSpec{Harness: "fake", Peers: peers}}
	if err := e.cl.Create(context.Background(), a); err != nil {
		e.t.Fatal(err)
	}
}

// logged counts the namespace's mail log records.
func (e *env) logged() int {
	e.t.Helper()
	kvs, err := e.srv.Store.ScanKV(context.Background(), "mailbox", ns+"/", "", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(kvs)
}

func (e *env) do(method, path string, body any, wantCode int) []byte {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, e.url+apischema.APIPath+"/namespaces/"+ns+"/agents/"+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantCode {
		e.t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, wantCode, data)
	}
	return data
}

func (e *env) send(from string, req mailwire.SendRequest, wantCode int) []byte {
	e.t.Helper()
	return e.do(http.MethodPost, from+"/mail", req, wantCode)
}

func (e *env) inbox(agent, query string) mailwire.Inbox {
	e.t.Helper()
	var in mailwire.Inbox
	if err := json.Unmarshal(e.do(http.MethodGet, agent+"/inbox"+query, nil, http.StatusOK), &in); err != nil {
		e.t.Fatal(err)
	}
	return in
}

func TestSendReadAck(t *testing.T) {
	e := serve(t)
	var sent mailwire.SendResponse
	if err := json.Unmarshal(e.send("a", mailwire.SendRequest{To: "b", Body: "hi\nsecond line", ConversationContext: "conv-1"}, http.StatusCreated), &sent); err != nil ||
		sent.Seq == 0 || sent.Time.IsZero() || sent.Replayed {
		t.Fatalf("send reply %+v %v", sent, err)
	}
	in := e.inbox("b", "?unread=true")
	if len(in.Items) != 1 || in.Unread != 1 || in.ReadCursor != 0 || in.Next != 0 {
		t.Fatalf("inbox %+v", in)
	}
	if m := in.Items[0]; m.Seq != sent.Seq || m.From != "a" || m.To != "b" || m.Body != "hi\nsecond line" || m.ConversationContext != "conv-1" {
		t.Fatalf("mail %+v", m)
	}
	var ack mailwire.AckResponse
	if err := json.Unmarshal(e.do(http.MethodPost, "b/inbox/ack", mailwire.AckRequest{UpTo: sent.Seq}, http.StatusOK), &ack); err != nil ||
		ack.ReadCursor != sent.Seq || ack.Unread != 0 {
		t.Fatalf("ack %+v %v", ack, err)
	}
	if in := e.inbox("b", "?unread=true"); len(in.Items) != 0 || in.Unread != 0 {
		t.Fatalf("unread after ack %+v", in)
	}
	if in := e.inbox("b", ""); len(in.Items) != 1 || in.ReadCursor != sent.Seq {
		t.Fatalf("whole inbox after ack %+v", in)
	}
	// A retry with the idempotency key appends once.
	key := mailwire.SendRequest{To: "b", Body: "once", IdempotencyKey: "k-1"}
	var first, again mailwire.SendResponse
	_ = json.Unmarshal(e.send("a", key, http.StatusCreated), &first)
	n := e.logged()
	_ = json.Unmarshal(e.send("a", key, http.StatusOK), &again)
	if again.Seq != first.Seq || !again.Replayed || e.logged() != n {
		t.Fatalf("retry %+v first %+v, log %d → %d", again, first, n, e.logged())
	}
	key.Body = "different"
	if body := e.send("a", key, http.StatusConflict); !strings.Contains(string(body), "idempotency key") {
		t.Fatalf("reused key: %s", body)
	}
}

// TestRefusedSendsAppendNothing: every refused send answers a clear status
// naming what is wrong, and the log is unchanged.
func TestRefusedSendsAppendNothing(t *testing.T) {
	e := serve(t)
	e.send("a", mailwire.SendRequest{To: "b", Body: "first"}, http.StatusCreated)
	before := e.logged()
	for _, tc := range []struct {
		name, from string
		body       any
		code       int
		want       string
	}{
		{"not granted", "b", mailwire.SendRequest{To: "a", Body: "hi"}, http.StatusForbidden,
			`missing permission: \"b\"'s spec.peers.sendTo does not include \"a\"`},
		{"no permission at all", "c", mailwire.SendRequest{To: "b", Body: "hi"}, http.StatusForbidden, "spec.peers.sendTo"},
		{"unknown recipient", "a", mailwire.SendRequest{To: "ghost", Body: "hi"}, http.StatusNotFound, `recipient agent \"ghost\" does not exist`},
		{"unknown sender", "ghost", mailwire.SendRequest{To: "b", Body: "hi"}, http.StatusNotFound, `sender agent \"ghost\" does not exist`},
		{"cross-namespace", "a", mailwire.SendRequest{To: "other/b", Body: "hi"}, http.StatusForbidden, "mail stays within one namespace"},
		{"empty body", "a", mailwire.SendRequest{To: "b", Body: "  \n"}, http.StatusBadRequest, "body is empty"},
		{"no recipient", "a", mailwire.SendRequest{Body: "hi"}, http.StatusBadRequest, "to is required"},
		{"oversized body", "a", mailwire.SendRequest{To: "b", Body: strings.Repeat("x", mailbox.MaxBodyBytes+1)},
			http.StatusRequestEntityTooLarge, "exceeds 65536 bytes (64 KiB)"},
		{"oversized escaped request", "a", `{"to":"b","body":"` + strings.Repeat(`\u0000`, mailbox.MaxBodyBytes+2000) + `"}`,
			http.StatusRequestEntityTooLarge, "64 KiB"},
		{"unknown field", "a", `{"to":"b","body":"hi","from":"c"}`, http.StatusBadRequest, `unknown field \"from\"`},
		{"to itself", "a", mailwire.SendRequest{To: "a", Body: "hi"}, http.StatusForbidden, "cannot send mail to itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := string(e.do(http.MethodPost, tc.from+"/mail", tc.body, tc.code))
			if !strings.Contains(body, tc.want) || !strings.Contains(body, "nothing was sent") {
				t.Fatalf("reply %s, want it to say %q and that nothing was sent", body, tc.want)
			}
			if got := e.logged(); got != before {
				t.Fatalf("a refused send changed the log: %d → %d records", before, got)
			}
		})
	}
}

// TestRevokedPermissionFailsTheNextSend: editing the sender's spec revokes at
// the next send.
func TestRevokedPermissionFailsTheNextSend(t *testing.T) {
	e := serve(t)
	e.send("a", mailwire.SendRequest{To: "b", Body: "allowed"}, http.StatusCreated)
	a := &v1alpha1.Agent{}
	ctx := context.Background()
	if err := e.cl.Get(ctx, ns, "a", a); err != nil {
		t.Fatal(err)
	}
	a.Spec.Peers.SendTo.Agents = nil
	if err := e.cl.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	n := e.logged()
	if body := e.send("a", mailwire.SendRequest{To: "b", Body: "revoked"}, http.StatusForbidden); !strings.Contains(string(body), "spec.peers.sendTo") {
		t.Fatalf("revoked send: %s", body)
	}
	if e.logged() != n {
		t.Fatal("a revoked send appended")
	}
}

func TestInboxPagesAndBounds(t *testing.T) {
	e := serve(t)
	for i := range 5 {
		e.send("a", mailwire.SendRequest{To: "b", Body: fmt.Sprint("m", i)}, http.StatusCreated)
	}
	in := e.inbox("b", "?limit=2")
	if len(in.Items) != 2 || in.Items[0].Body != "m0" || in.Next != in.Items[1].Seq || in.Unread != 5 {
		t.Fatalf("page 1 %+v", in)
	}
	in = e.inbox("b", fmt.Sprintf("?limit=2&after=%d", in.Next))
	in = e.inbox("b", fmt.Sprintf("?limit=2&after=%d", in.Next))
	if len(in.Items) != 1 || in.Items[0].Body != "m4" || in.Next != 0 {
		t.Fatalf("last page %+v", in)
	}
	for _, q := range []string{"?limit=0", "?limit=1001", "?limit=x", "?after=-1", "?unread=maybe"} {
		e.do(http.MethodGet, "b/inbox"+q, nil, http.StatusBadRequest)
	}
	e.do(http.MethodGet, "ghost/inbox", nil, http.StatusNotFound)
	e.do(http.MethodPost, "ghost/inbox/ack", mailwire.AckRequest{UpTo: 1}, http.StatusNotFound)
	e.do(http.MethodPost, "b/inbox/ack", `{"upto":1,"x":2}`, http.StatusBadRequest)
	// No role may get mail or delete an inbox: a namespaced token is refused
	// before the handler sees the method (as kube-apiserver authorizes first).
	e.do(http.MethodGet, "a/mail", nil, http.StatusForbidden)
	e.do(http.MethodDelete, "b/inbox", nil, http.StatusForbidden)
}

func TestOtherNamespaceIsForbidden(t *testing.T) {
	e := serve(t)
	req, _ := http.NewRequest(http.MethodGet, e.url+apischema.APIPath+"/namespaces/other/agents/b/inbox", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("inbox of another namespace: %d", resp.StatusCode)
	}
}
