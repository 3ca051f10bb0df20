package aictl

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/history/historytest"
	"aicli.dev/aicli/internal/history/historywire"
)

func historyServer(t *testing.T) string {
	t.Helper()
	srv := apiservertest.New(t)
	historytest.Serve(t, srv)
	return srv.ServeUnix(t)
}

func TestHistorySearchTable(t *testing.T) {
	url := historyServer(t)
	r := aictl(t, url, "history", "search", "alice", "deploy", "--speaker", "human")
	wantCode(t, r, 0)
	want := [][]string{
		{"TIME", "CONVERSATION", "CURSOR", "SPEAKER", "SNIPPET"},
		{"2026-12-01", "10:00:00", "alice-1", "1", "human", "please", "fix", "the", "flaky", "**deploy**", "script"},
	}
	if rows := cells(r.out); fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Fatalf("history search:\n%s\nwant %v", r.out, want)
	}

	// No query: newest first; --since as an RFC 3339 time; --limit.
	r = aictl(t, url, "history", "search", "alice", "--since", historytest.T0.Add(time.Minute).Format(time.RFC3339), "--limit", "5")
	wantCode(t, r, 0)
	if lines := strings.Split(strings.TrimSpace(r.out), "\n"); len(lines) != 3 ||
		!strings.Contains(lines[1], "alice-2") || !strings.Contains(lines[2], "alice-1") {
		t.Fatalf("newest first since T0+1m:\n%s", r.out)
	}

	r = aictl(t, url, "history", "search", "alice", "deploy", "--conversation", "alice-2", "-o", "json")
	wantCode(t, r, 0)
	var page historywire.Page
	if err := json.Unmarshal([]byte(r.out), &page); err != nil || len(page.Items) != 1 ||
		page.Items[0].Speaker != "mail:bob" || page.Items[0].ConversationUID == "" || page.Items[0].Cursor != 1 {
		t.Fatalf("-o json: %v\n%s", err, r.out)
	}

	// Another agent's history is not searched; a duration --since far back finds nothing new either.
	r = aictl(t, url, "history", "search", "bob", "script", "--since", "1h")
	wantCode(t, r, 0)
	if r.out != "" || !strings.Contains(r.err, "No history entries of agent bob match.") {
		t.Fatalf("bob script: out %q err %q", r.out, r.err)
	}
}

func TestHistorySearchErrors(t *testing.T) {
	url := historyServer(t)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"alice", `deploy "unclosed`}, "offset 7"},
		{[]string{"carol", "deploy"}, `agents.aicli.dev "carol" not found`},
		{[]string{"alice", "--since", "yesterday"}, "want a duration"},
		{[]string{"alice", "-o", "xml"}, "unknown output format"},
	} {
		r := aictl(t, url, append([]string{"history", "search"}, tc.args...)...)
		wantCode(t, r, 1)
		if !strings.Contains(r.err, tc.msg) {
			t.Errorf("%v: stderr %q, want %q", tc.args, r.err, tc.msg)
		}
	}
}
