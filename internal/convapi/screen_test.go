package convapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/convapi/convapitest"
	"aicli.dev/aicli/internal/convapi/wire"
)

func TestScreen(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "c1", "coder", v1alpha1.ConversationActive)
	env.CreateConversation(t, "default", "p1", "coder", v1alpha1.ConversationPaused)
	pty := env.Live(t, "default", "c1")
	want := ptyapi.Screen{Cols: 20, Rows: 3, Lines: []string{"fake[turn 1]: hi   ", "> ", ""}, CursorX: 2, CursorY: 1}
	pty.SetScreen(want)
	path := convapitest.Path("conversations", "default", "c1", wire.SubScreen)

	code, body := env.Do(t, http.MethodGet, path, "", nil)
	if code != http.StatusOK {
		t.Fatalf("screen: HTTP %d: %s", code, body)
	}
	var got ptyapi.Screen
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Cols != 20 || got.Rows != 3 || len(got.Lines) != 3 || got.Lines[0] != want.Lines[0] || got.CursorY != 1 {
		t.Errorf("screen = %+v, want %+v", got, want)
	}

	code, body = env.Do(t, http.MethodGet, path+"?format=text", "", nil)
	if code != http.StatusOK || string(body) != "fake[turn 1]: hi\n>\n\n" {
		t.Errorf("text screen: HTTP %d %q", code, body)
	}

	code, body = env.Do(t, http.MethodGet, path+"?format=html", "", nil)
	wantStatus(t, code, body, http.StatusBadRequest, "format")
	code, body = env.Do(t, http.MethodGet, convapitest.Path("conversations", "default", "p1", wire.SubScreen), "", nil)
	wantStatus(t, code, body, http.StatusConflict, "p1 is Paused")
	code, body = env.Do(t, http.MethodPost, path, "", nil)
	wantStatus(t, code, body, http.StatusMethodNotAllowed)
}
