package historyapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/history/historytest"
	"aicli.dev/aicli/internal/history/historywire"
)

func get(t *testing.T, base, agent string, params url.Values) (int, []byte) {
	t.Helper()
	u := base + apischema.APIPath + "/namespaces/default/agents/" + agent + "/" + historywire.SubHistory + "?" + params.Encode()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func search(t *testing.T, base, agent string, params url.Values) []historywire.Hit {
	t.Helper()
	code, body := get(t, base, agent, params)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var p historywire.Page
	if err := json.Unmarshal(body, &p); err != nil || p.Items == nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return p.Items
}

func TestHistorySearch(t *testing.T) {
	srv := apiservertest.New(t)
	historytest.Serve(t, srv)
	base := srv.ServeLoopback(t, apiserver.LocalAdmin)

	hits := search(t, base, "alice", url.Values{"q": {"deploy"}})
	if len(hits) != 3 {
		t.Fatalf("alice deploy: %+v", hits)
	}
	for _, h := range hits {
		if h.Agent != "alice" || h.Namespace != "default" || h.ConversationUID == "" || !strings.Contains(h.Snippet, "**deploy**") {
			t.Errorf("hit %+v", h)
		}
	}
	hits = search(t, base, "alice", url.Values{"q": {"deploy"}, "speaker": {"agent"}})
	if len(hits) != 1 || hits[0].Conversation != "alice-1" || hits[0].Cursor != 2 {
		t.Fatalf("speaker agent: %+v", hits)
	}
	hits = search(t, base, "alice", url.Values{"since": {historytest.T0.Add(time.Minute).Format(time.RFC3339)}, "limit": {"1"}})
	if len(hits) != 1 || hits[0].Conversation != "alice-2" {
		t.Fatalf("since, limit 1: %+v", hits)
	}
	hits = search(t, base, "alice", url.Values{"conversation": {"alice-1"}})
	if len(hits) != 2 || hits[0].Cursor != 2 || hits[1].Cursor != 1 {
		t.Fatalf("conversation alice-1: %+v", hits)
	}
	if hits := search(t, base, "bob", url.Values{"q": {"script"}}); len(hits) != 0 {
		t.Fatalf("bob sees alice's history: %+v", hits)
	}
}

func TestHistoryErrors(t *testing.T) {
	srv := apiservertest.New(t)
	historytest.Serve(t, srv)
	base := srv.ServeLoopback(t, apiserver.LocalAdmin)
	for _, tc := range []struct {
		agent  string
		params url.Values
		code   int
		msg    string
	}{
		{"alice", url.Values{"q": {`deploy "unclosed`}}, http.StatusBadRequest, "offset 7"},
		{"carol", url.Values{"q": {"deploy"}}, http.StatusNotFound, "carol"},
		{"alice", url.Values{"since": {"yesterday"}}, http.StatusBadRequest, "RFC 3339"},
		{"alice", url.Values{"limit": {"0"}}, http.StatusBadRequest, "limit"},
		{"alice", url.Values{"conversation": {"a/b"}}, http.StatusBadRequest, "invalid query"},
	} {
		code, body := get(t, base, tc.agent, tc.params)
		if code != tc.code || !strings.Contains(string(body), tc.msg) {
			t.Errorf("%s %v: %d %s; want %d with %q", tc.agent, tc.params, code, body, tc.code, tc.msg)
		}
	}
	resp, err := http.Post(base+apischema.APIPath+"/namespaces/default/agents/alice/"+historywire.SubHistory, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
}
