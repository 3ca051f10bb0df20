package aictl

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestBudgetShowAndTopUp checks `aictl budget show|topup` call the agent's
// budget subresources and print their answer.
func TestBudgetShowAndTopUp(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	server := fakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, r.Method+" "+r.URL.Path+" "+string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		resumed := ""
		if r.Method == http.MethodPost {
			resumed = `,"resumed":["a-x1"]`
		}
		_, _ = w.Write([]byte(`{"agent":"a","usdPerHour":"2","burstUSD":"2","maxWaitSeconds":600,"availableUSD":"5.5",` +
			`"asOf":"2026-12-01T12:00:00Z","spentUSD":"0.5","toppedUpUSD":"5"` + resumed + `}`))
	})
	run := func(args ...string) result { return aictl(t, server, args...) }
	r := run("budget", "show", "a", "-n", "team")
	if r.code != 0 || !strings.Contains(r.out, "Available:   $5.5") || !strings.Contains(r.out, "$2/h") {
		t.Fatalf("budget show: %+v", r)
	}
	r = run("budget", "topup", "a", "--usd", "5", "--rate", "2")
	if r.code != 0 || !strings.Contains(r.out, "Resumed:     conversation/a-x1") {
		t.Fatalf("budget topup: %+v", r)
	}
	if r := run("budget", "topup", "a"); r.code == 0 || !strings.Contains(r.err, "--usd") {
		t.Fatalf("topup without amounts: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"GET /apis/aicli.dev/v1alpha1/namespaces/team/agents/a/budget ",
		`POST /apis/aicli.dev/v1alpha1/namespaces/default/agents/a/budget/topup {"usd":"5","usdPerHour":"2"}`,
	}
	if len(calls) != 2 || calls[0] != want[0] || calls[1] != want[1] {
		t.Fatalf("calls %q, want %q", calls, want)
	}
}
