package toolcallapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/toolcalls"
	"aicli.dev/aicli/internal/toolcalls/toolcallapi"
	"aicli.dev/aicli/internal/toolcalls/toolcallstest"
)

func get(t *testing.T, url, path string, wantCode int) []byte {
	t.Helper()
	resp, err := http.Get(url + apischema.APIPath + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantCode {
		t.Fatalf("GET %s: %d, want %d: %s", path, resp.StatusCode, wantCode, data)
	}
	return data
}

func TestToolCallsOfAConversation(t *testing.T) {
	if toolcalls.TypeStatus != store.TypeStatus {
		t.Fatalf("toolcalls.TypeStatus %q, store %q", toolcalls.TypeStatus, store.TypeStatus)
	}
	srv := apiservertest.New(t)
	toolcallapi.Register(srv.API, srv.Store)
	url := srv.ServeLoopback(t, &apiserver.Principal{Name: "a", Namespaces: []string{"team-a"}})

	toolcallstest.Conversation(t, srv, "team-a", "coder-1", "coder")
	toolcallstest.Grant(t, srv, "team-a", "tools", "coder", toolcallstest.Tool("greet"))
	toolcallstest.Grant(t, srv, "team-a", "more", "coder", toolcallstest.Tool("search"))
	toolcallstest.Grant(t, srv, "team-a", "theirs", "reviewer", toolcallstest.Tool("greet"))
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	at := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	toolcallstest.Call(t, srv, "team-a", "tools", v1alpha1.ToolCall{Tool: "greet", Conversation: "coder-1", At: at(1), DurationMillis: 5, BytesOut: 6})
	toolcallstest.Call(t, srv, "team-a", "more", v1alpha1.ToolCall{Tool: "search", Conversation: "coder-1", At: at(2), ExitCode: -1, Refused: "RateLimited"})
	toolcallstest.Call(t, srv, "team-a", "tools", v1alpha1.ToolCall{Tool: "greet", Conversation: "coder-2", At: at(3)})
	toolcallstest.Call(t, srv, "team-a", "tools", v1alpha1.ToolCall{Tool: "greet", Conversation: "coder-1", At: at(4), ExitCode: 2})
	toolcallstest.Call(t, srv, "team-a", "theirs", v1alpha1.ToolCall{Tool: "greet", Conversation: "coder-1", At: at(5)})
	// A status write that is not a call (a lease taken) adds nothing.
	toolcallstest.UpdateStatus(t, srv, "team-a", "tools", func(st *v1alpha1.GrantStatus) {
		st.Conversations = []v1alpha1.GrantConversation{{Name: "coder-1", LeaseExpiresAt: &metav1.Time{Time: t0}}}
	})

	var list toolcalls.List
	if err := json.Unmarshal(get(t, url, "/namespaces/team-a/conversations/coder-1/toolcalls", http.StatusOK), &list); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		grant, tool string
		exit        int32
		refused     string
	}{{"tools", "greet", 0, ""}, {"more", "search", -1, "RateLimited"}, {"tools", "greet", 2, ""}}
	if len(list.Items) != len(want) {
		t.Fatalf("calls %+v", list.Items)
	}
	for i, w := range want {
		c := list.Items[i]
		if c.Grant != w.grant || c.Tool != w.tool || c.ExitCode != w.exit || c.Refused != w.refused || c.Conversation != "coder-1" {
			t.Fatalf("call %d = %+v, want %+v", i, c, w)
		}
	}
	if list.Items[0].BytesOut != 6 || list.Items[0].DurationMillis != 5 || !list.Items[0].At.Equal(&metav1.Time{Time: at(1).Time}) {
		t.Fatalf("first call %+v", list.Items[0])
	}

	toolcallstest.Conversation(t, srv, "team-a", "quiet", "nobody")
	if string(get(t, url, "/namespaces/team-a/conversations/quiet/toolcalls", http.StatusOK)) != "{\"items\":[]}\n" {
		t.Fatal("a conversation without calls lists something")
	}
	get(t, url, "/namespaces/team-a/conversations/ghost/toolcalls", http.StatusNotFound)
	get(t, url, "/namespaces/team-b/conversations/coder-1/toolcalls", http.StatusForbidden)
	resp, err := http.Post(url+apischema.APIPath+"/namespaces/team-a/conversations/coder-1/toolcalls", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden { // no role may create toolcalls
		t.Fatalf("POST: %d", resp.StatusCode)
	}
}
