package convapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/convapi/convapitest"
	"aicli.dev/aicli/internal/convapi/wire"
)

func sendPath(ns, name string) string {
	return convapitest.Path("conversations", ns, name, wire.SubSend)
}

func jsonText(t *testing.T, text string) []byte {
	t.Helper()
	b, err := json.Marshal(wire.SendRequest{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSendDeliversAndAttributes(t *testing.T) {
	env, pty := liveC1(t, false)
	uid := env.UID(t, "default", "c1")
	// The attribution hook must run before the guest sees the text.
	var expectedBefore []convapitest.Expectation
	pty.OnMessage(func(string) { expectedBefore = env.Attribution.Calls() })

	code, body := env.Do(t, http.MethodPost, sendPath("default", "c1"), "application/json", jsonText(t, "hello \"world\"\nline 2"))
	if code != http.StatusAccepted {
		t.Fatalf("send: HTTP %d, want 202: %s", code, body)
	}
	var resp wire.SendResponse
	if err := json.Unmarshal(body, &resp); err != nil || !resp.Accepted {
		t.Fatalf("send reply %s, want {\"accepted\":true}", body)
	}
	code, body = env.Do(t, http.MethodPost, sendPath("default", "c1"), "text/plain; charset=utf-8", []byte("plain body"))
	if code != http.StatusAccepted {
		t.Fatalf("text/plain send: HTTP %d, want 202: %s", code, body)
	}

	if got, want := pty.Messages(), []string{"hello \"world\"\nline 2", "plain body"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("guest received %q, want %q", got, want)
	}
	calls := env.Attribution.Calls()
	if len(calls) != 2 || calls[0] != (convapitest.Expectation{UID: uid, Speaker: "human", Text: "hello \"world\"\nline 2"}) ||
		calls[1].Text != "plain body" || calls[1].Speaker != "human" {
		t.Errorf("attribution calls = %+v", calls)
	}
	if len(expectedBefore) == 0 {
		t.Error("Attribution.Expect had not been called when the guest received the message")
	}
}

func TestSendRefusals(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateAgent(t, "team", "coder")
	env.CreateConversation(t, "default", "paused", "coder", v1alpha1.ConversationPaused)
	env.CreateConversation(t, "team", "paused", "coder", v1alpha1.ConversationPaused)
	env.CreateConversation(t, "default", "archived", "coder", v1alpha1.ConversationArchived)
	env.CreateConversation(t, "default", "noguest", "coder", v1alpha1.ConversationActive)
	// A paused conversation whose guest is still connected (pause in
	// progress) must refuse too: the desired state decides.
	pausing := env.Live(t, "default", "paused")

	cases := []struct {
		name, ns, conv, ct string
		body               []byte
		code               int
		want               []string
	}{
		{"paused", "default", "paused", "application/json", jsonText(t, "hi"), 409,
			[]string{"conversation paused is Paused: resume it first (aictl resume paused)"}},
		{"paused other namespace", "team", "paused", "application/json", jsonText(t, "hi"), 409,
			[]string{"aictl resume paused -n team"}},
		{"archived", "default", "archived", "application/json", jsonText(t, "hi"), 409,
			[]string{"archived is Archived", "aictl start coder"}},
		{"no guest", "default", "noguest", "application/json", jsonText(t, "hi"), 409,
			[]string{"noguest is not live", "guest is not connected", "aictl wait --for=condition=Ready conversation/noguest"}},
		{"empty json", "default", "noguest", "application/json", jsonText(t, ""), 400, []string{"empty"}},
		{"blank text/plain", "default", "noguest", "text/plain", []byte(" \n\t"), 400, []string{"empty"}},
		{"no body", "default", "noguest", "", nil, 400, []string{"text"}},
		{"unknown field", "default", "noguest", "application/json", []byte(`{"txt":"hi"}`), 400, []string{"txt"}},
		{"too large json", "default", "noguest", "application/json",
			jsonText(t, strings.Repeat("x", ptyapi.MaxMessageBytes+1)), 413, []string{"exceeds 262144 bytes"}},
		{"too large escaped json", "default", "noguest", "application/json",
			jsonText(t, strings.Repeat("\x01", ptyapi.MaxMessageBytes+1)), 413, []string{"exceeds"}},
		{"too large text/plain", "default", "noguest", "text/plain",
			[]byte(strings.Repeat("x", ptyapi.MaxMessageBytes+1)), 413, []string{"exceeds"}},
		{"unsupported type", "default", "noguest", "application/xml", []byte("<x/>"), 415, []string{"text/plain"}},
		{"missing conversation", "default", "ghost", "application/json", jsonText(t, "hi"), 404, []string{"ghost"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := env.Do(t, http.MethodPost, sendPath(tc.ns, tc.conv), tc.ct, tc.body)
			wantStatus(t, code, body, tc.code, tc.want...)
		})
	}
	if msgs := pausing.Messages(); len(msgs) != 0 {
		t.Errorf("a refused send reached the guest: %q", msgs)
	}
	if calls := env.Attribution.Calls(); len(calls) != 0 {
		t.Errorf("a refused send was announced to the transcript pump: %+v", calls)
	}
}

func TestSendExactlyAtTheLimitIsAccepted(t *testing.T) {
	env, pty := liveC1(t, false)
	code, body := env.Do(t, http.MethodPost, sendPath("default", "c1"), "text/plain", []byte(strings.Repeat("y", ptyapi.MaxMessageBytes)))
	if code != http.StatusAccepted {
		t.Fatalf("HTTP %d, want 202: %.300s", code, body)
	}
	if msgs := pty.Messages(); len(msgs) != 1 || len(msgs[0]) != ptyapi.MaxMessageBytes {
		t.Errorf("guest got %d messages", len(msgs))
	}
}

func TestSendGuestErrors(t *testing.T) {
	cases := []struct {
		name string
		err  error
		code int
		want string
	}{
		{"exited", fmt.Errorf("deliver: %w", ptyapi.ErrExited), 409, "CLI has exited"},
		{"not started", ptyapi.ErrNotStarted, 409, "not started"},
		{"guest internal", ptyapi.Errorf(ptyapi.ErrInternal, "boom"), 500, "boom"},
		{"guest unreachable", errors.New("yamux: stream closed"), 503, "did not answer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, pty := liveC1(t, false)
			pty.FailSends(tc.err)
			code, body := env.Do(t, http.MethodPost, sendPath("default", "c1"), "application/json", jsonText(t, "hi"))
			wantStatus(t, code, body, tc.code, tc.want)
		})
	}
}
