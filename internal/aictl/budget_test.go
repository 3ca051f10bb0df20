package aictl

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"aicli.dev/aicli/internal/aictl/aictltest"
)

// TestBudgetShowAndTopUp checks `aictl budget show|topup` call the agent's
// budget subresources and print their answer.
func TestBudgetShowAndTopUp(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var calls []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	run := func(args ...string) aictltest.Result {
		return aictltest.Run(context.Background(), func(ctx context.Context, a []string, in io.Reader, out, errOut io.Writer) int {
			return Run(ctx, a, IOStreams{In: in, Out: out, ErrOut: errOut})
		}, "", append([]string{"--server", "unix://" + sock}, args...))
	}
	r := run("budget", "show", "a", "-n", "team")
	if r.Code != 0 || !strings.Contains(r.Out, "Available:   $5.5") || !strings.Contains(r.Out, "$2/h") {
		t.Fatalf("budget show: %+v", r)
	}
	r = run("budget", "topup", "a", "--usd", "5", "--rate", "2")
	if r.Code != 0 || !strings.Contains(r.Out, "Resumed:     conversation/a-x1") {
		t.Fatalf("budget topup: %+v", r)
	}
	if r := run("budget", "topup", "a"); r.Code == 0 || !strings.Contains(r.Err, "--usd") {
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
