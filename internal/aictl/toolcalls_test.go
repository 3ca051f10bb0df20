package aictl

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/toolcalls"
	"aicli.dev/aicli/internal/toolcalls/toolcallapi"
	"aicli.dev/aicli/internal/toolcalls/toolcallstest"
)

// toolCallServer serves the API with the toolcalls subresource, seeded with
// conversation coder-1 of agent coder, its grant "tools" (greet and search)
// and four calls, one of them refused and one by another conversation.
func toolCallServer(t *testing.T) (*apiservertest.Server, string) {
	t.Helper()
	srv := apiservertest.New(t)
	toolcallapi.Register(srv.API, srv.Store)
	url := srv.ServeUnix(t)

	toolcallstest.Conversation(t, srv, "default", "coder-1", "coder")
	greet := toolcallstest.Tool("greet")
	greet.Usage = "greet NAME"
	greet.Attenuation = &v1alpha1.Attenuation{PinnedParams: map[string]string{"lang": "en"}, MaxCallsPerHour: 30}
	search := v1alpha1.ToolGrant{Name: "search", ClassName: "web-search", TimeoutSeconds: 5, Parameters: []string{"q"}}
	toolcallstest.Grant(t, srv, "default", "tools", "coder", greet, search)

	expires := metav1.NewTime(time.Now().Add(time.Minute))
	now := metav1.Now()
	toolcallstest.UpdateStatus(t, srv, "default", "tools", func(st *v1alpha1.GrantStatus) {
		st.Conditions = []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Succeeded", LastTransitionTime: now},
			{Type: "LeaseHeld", Status: metav1.ConditionTrue, Reason: "Held", LastTransitionTime: now},
		}
		st.Conversations = []v1alpha1.GrantConversation{{Name: "coder-1", LeaseExpiresAt: &expires}}
	})
	at := metav1.NewTime(time.Now().Add(-2 * time.Minute))
	for _, c := range []v1alpha1.ToolCall{
		{Tool: "greet", Conversation: "coder-1", At: at, DurationMillis: 1500, BytesIn: 4, BytesOut: 12},
		{Tool: "search", Conversation: "coder-1", At: at, ExitCode: -1, Refused: "RateLimited"},
		{Tool: "greet", Conversation: "coder-9", At: at},
		{Tool: "greet", Conversation: "coder-1", At: at, ExitCode: 3, DurationMillis: 20},
	} {
		toolcallstest.Call(t, srv, "default", "tools", c)
	}
	return srv, url
}

func TestToolCallsTable(t *testing.T) {
	_, url := toolCallServer(t)
	r := aictl(t, url, "tool-calls", "coder-1")
	wantCode(t, r, 0)
	rows := cells(r.out)
	want := [][]string{
		{"TOOL", "GRANT", "EXIT", "DURATION", "BYTES IN", "BYTES OUT", "REFUSED", "AGE"},
		{"greet", "tools", "0", "1.5s", "4", "12", "<none>", "2m"},
		{"search", "tools", "-1", "0s", "0", "0", "RateLimited", "2m"},
		{"greet", "tools", "3", "20ms", "0", "0", "<none>", "2m"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Fatalf("tool-calls:\n%s\nwant %v", r.out, want)
	}

	r = aictl(t, url, "tool-calls", "conversation/coder-1", "-o", "json")
	wantCode(t, r, 0)
	var list toolcalls.List
	if err := json.Unmarshal([]byte(r.out), &list); err != nil || len(list.Items) != 3 || list.Items[1].Refused != "RateLimited" ||
		list.Items[0].Grant != "tools" || list.Items[0].BytesOut != 12 {
		t.Fatalf("-o json: %v\n%s", err, r.out)
	}

	r = aictl(t, url, "tool-calls", "coder-1", "-o", "xml")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, `unknown output format "xml"`) {
		t.Fatalf("-o xml: %q", r.err)
	}

	r = aictl(t, url, "tool-calls", "ghost")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "(NotFound)") {
		t.Fatalf("unknown conversation: %q", r.err)
	}
}

func TestToolCallsNoneRecorded(t *testing.T) {
	srv, url := toolCallServer(t)
	toolcallstest.Conversation(t, srv, "default", "quiet-1", "quiet")
	r := aictl(t, url, "tool-calls", "quiet-1")
	wantCode(t, r, 0)
	if r.out != "" || r.err != "No tool calls recorded for conversation quiet-1.\n" {
		t.Fatalf("no calls: %+v", r)
	}
}

func TestGetGrantsPrintColumns(t *testing.T) {
	_, url := toolCallServer(t)
	r := aictl(t, url, "get", "grants")
	wantCode(t, r, 0)
	rows := cells(r.out)
	if len(rows) != 2 || strings.Join(rows[0], ",") != "NAME,SUBJECT,TOOLS,LEASE,READY,AGE" ||
		strings.Join(rows[1][:5], ",") != "tools,coder,greet,search,True,True" {
		t.Fatalf("get grants:\n%s", r.out)
	}
	r = aictl(t, url, "get", "grants", "-o", "wide")
	wantCode(t, r, 0)
	rows = cells(r.out)
	if strings.Join(rows[0], ",") != "NAME,SUBJECT,TOOLS,LEASE,CALLS,READY,REASON,AGE" ||
		strings.Join(rows[1][:7], ",") != "tools,coder,greet,search,True,3,True,Succeeded" {
		t.Fatalf("get grants -o wide:\n%s", r.out)
	}
}

func TestDescribeGrant(t *testing.T) {
	_, url := toolCallServer(t)
	r := aictl(t, url, "describe", "grant", "tools")
	wantCode(t, r, 0)
	for _, want := range []string{
		"Tools:\n",
		"greet    greet",
		"greet NAME",
		"lang=en",
		"web-search",
		"Leases:\n",
		"Calls:  3 authorised, 1 refused\n",
		"Recent Calls (4 of 4, newest last):\n",
		"RateLimited",
		"coder-9",
	} {
		if !strings.Contains(r.out, want) {
			t.Fatalf("describe grant misses %q:\n%s", want, r.out)
		}
	}
	section := func(name string) [][]string {
		s := r.out[strings.Index(r.out, name):]
		s = s[strings.Index(s, "\n")+1:]
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.HasPrefix(l, "  ") {
				break
			}
			lines = append(lines, strings.TrimPrefix(l, "  "))
		}
		return cells(strings.Join(lines, "\n"))
	}
	tools := section("Tools:")
	if fmt.Sprint(tools[0]) != "[NAME CLASS USAGE TIMEOUT PARAMETERS PINS CALLS/HOUR]" ||
		fmt.Sprint(tools[1]) != "[greet greet greet NAME <class> <none> lang=en 30]" ||
		fmt.Sprint(tools[2]) != "[search web-search <none> 5s q <none> unlimited]" {
		t.Fatalf("tools table %q", tools)
	}
	leases := section("Leases:")
	if len(leases) != 2 || leases[1][0] != "coder-1" || leases[1][1] != "Held" || !strings.HasPrefix(leases[1][2], "in ") || leases[1][3] != "3" {
		t.Fatalf("leases table %q", leases)
	}
	calls := section("Recent Calls")
	if len(calls) != 5 || fmt.Sprint(calls[0]) != "[CONVERSATION TOOL EXIT DURATION BYTES IN BYTES OUT REFUSED AGE]" ||
		calls[2][1] != "search" || calls[4][2] != "3" {
		t.Fatalf("calls table %q", calls)
	}
}
