package convapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/convapi/convapitest"
)

// wantStatus checks that a reply is a Status with code whose message contains every want.
func wantStatus(t *testing.T, code int, body []byte, wantCode int, want ...string) metav1.Status {
	t.Helper()
	if code != wantCode {
		t.Fatalf("HTTP %d, want %d: %s", code, wantCode, body)
	}
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("reply is not a Status (%v): %s", err, body)
	}
	if int(st.Code) != wantCode {
		t.Fatalf("Status.code %d, want %d: %s", st.Code, wantCode, body)
	}
	for _, w := range want {
		if !strings.Contains(st.Message, w) {
			t.Errorf("Status message %q does not contain %q", st.Message, w)
		}
	}
	return st
}

func decodeObject(t *testing.T, body []byte) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(body); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return obj
}

// eventually polls cond every 5ms until it holds or 10s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// liveC1 is an Env with agent coder and its Active conversation c1 in the
// default namespace, live on a fake PTY (remote: through the real proxy).
func liveC1(t *testing.T, remote bool) (*convapitest.Env, *convapitest.PTY) {
	t.Helper()
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)
	if remote {
		return env, env.LiveRemote(t, "default", "c1")
	}
	return env, env.Live(t, "default", "c1")
}

// dialC1 attaches to c1 and waits for the repaint and the PTY subscription.
func dialC1(ctx context.Context, t *testing.T, env *convapitest.Env, pty *convapitest.PTY) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(ctx, attachURL(env, "default", "c1"), nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	readUntil(ctx, t, c, "? for shortcuts")
	eventually(t, "the attach subscribed to the PTY", func() bool { return pty.Subscribers() == 1 })
	return c
}
