package convapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/convapi/convapitest"
	"aicli.dev/aicli/internal/convapi/wire"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// A send naming a monitor is that monitor's advice: the target supervisor
// prefixes it and attributes it to injected:<monitor>, over TLS with a
// namespace-bound token through the aictl client.
func TestSendAdviceIsPrefixedAndAttributed(t *testing.T) {
	env, pty := liveC1(t, false)
	uid := env.UID(t, "default", "c1")
	url, ca := env.ServeTLS(t, "tok")
	c, err := client.New(client.Config{Server: url, Token: "tok", CAFile: ca})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SendAdvice(context.Background(), "default", "c1", "watcher", "restart the worker"); err != nil {
		t.Fatalf("SendAdvice: %v", err)
	}
	want := `[Advice from monitor "watcher"]: restart the worker`
	if got := pty.Messages(); len(got) != 1 || got[0] != want {
		t.Errorf("guest received %q, want %q", got, want)
	}
	calls := env.Attribution.Calls()
	if len(calls) != 1 || calls[0] != (convapitest.Expectation{UID: uid, Speaker: transcriptwire.SpeakerInjectedPrefix + "watcher", Text: want}) {
		t.Errorf("attribution = %+v", calls)
	}
}

func TestSendAdviceRefusals(t *testing.T) {
	env, pty := liveC1(t, false)
	prefix := len(transcriptwire.AdvicePrefix("watcher"))
	body := func(monitor, text string) []byte {
		b, err := json.Marshal(wire.SendRequest{Text: text, Monitor: monitor})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	code, data := env.Do(t, http.MethodPost, sendPath("default", "c1"), "application/json", body("Not_A_Label", "hi"))
	wantStatus(t, code, data, http.StatusBadRequest, `monitor "Not_A_Label"`)
	code, data = env.Do(t, http.MethodPost, sendPath("default", "c1"), "application/json", body("watcher", " "))
	wantStatus(t, code, data, http.StatusBadRequest, "empty")
	// The limit holds for prefix and text together.
	code, data = env.Do(t, http.MethodPost, sendPath("default", "c1"), "application/json",
		body("watcher", strings.Repeat("x", ptyapi.MaxMessageBytes-prefix+1)))
	wantStatus(t, code, data, http.StatusRequestEntityTooLarge, "exceeds")
	if len(pty.Messages()) != 0 {
		t.Fatalf("refused advice reached the guest: %q", pty.Messages())
	}
	code, data = env.Do(t, http.MethodPost, sendPath("default", "c1"), "application/json",
		body("watcher", strings.Repeat("x", ptyapi.MaxMessageBytes-prefix)))
	if code != http.StatusAccepted {
		t.Fatalf("advice at the limit: HTTP %d: %s", code, data)
	}

	// Not live: the client sees the 409.
	c, err := client.New(client.Config{Server: env.URL})
	if err != nil {
		t.Fatal(err)
	}
	env.Sessions.Remove(env.UID(t, "default", "c1"))
	if err := c.SendAdvice(context.Background(), "default", "c1", "watcher", "hi"); !apierrors.IsConflict(err) {
		t.Errorf("advice to a conversation without a guest: %v, want 409", err)
	}
}
