package aictl

import (
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestSpendAsksTheSupervisor checks `aictl spend` calls the spend-history
// endpoint (all namespaces, or the one given with -n) and prints its answer.
func TestSpendAsksTheSupervisor(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	server := fakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.RequestURI())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"days":[{"date":"2026-11-30","models":[{"model":"claude-sonnet-4-5","harness":"claude","uncachedInput":100,"cacheRead":10,"cacheWrite":5,"output":50,"costUSD":0.00108,"priced":true}]}],"unpricedModels":[],"unparseableFiles":0,"unparseableLines":0}`))
	})
	run := func(args ...string) result { return aictl(t, server, args...) }
	r := run("spend", "--since", "2026-11-01", "-o", "json")
	if r.code != 0 || !strings.Contains(r.out, `"uncachedInput":100`) && !strings.Contains(r.out, `"uncachedInput": 100`) {
		t.Fatalf("spend -o json: %+v", r)
	}
	r = run("spend", "-n", "team-a", "--since", "2026-11-01")
	if r.code != 0 || !strings.Contains(r.out, "2026-11-30") {
		t.Fatalf("spend table: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"/apis/aicli.dev/v1alpha1/spendhistory?since=2026-11-01", "/apis/aicli.dev/v1alpha1/namespaces/team-a/spendhistory?since=2026-11-01"}
	if len(paths) != 2 || paths[0] != want[0] || paths[1] != want[1] {
		t.Fatalf("paths %v, want %v", paths, want)
	}
}
