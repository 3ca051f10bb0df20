package console

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/console/state"
)

// benchFleet is a console over three API servers holding agents agents in
// total, each with one paused conversation.
func benchFleet(b *testing.B, agents int) (*testConsole, []*client.Client) {
	b.Helper()
	var sups []state.Supervisor
	var clients []*client.Client
	for i := range 3 {
		api := apiservertest.New(b)
		api.API.Handle("GET /readyz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
		ctx := context.Background()
		for j := i; j < agents; j += 3 {
			name := fmt.Sprintf("agent-%04d", j)
			a := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "aicli.dev/v1alpha1", "kind": "Agent",
				"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": map[string]any{"harness": "fake"}}}
			if _, err := api.Store.Create(ctx, "agents", a); err != nil {
				b.Fatal(err)
			}
			c := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "aicli.dev/v1alpha1", "kind": "Conversation",
				"metadata": map[string]any{"name": name + "-1", "namespace": "default"},
				"spec":     map[string]any{"agentRef": name, "desiredState": "Paused"}}}
			if _, err := api.Store.Create(ctx, "conversations", c); err != nil {
				b.Fatal(err)
			}
		}
		addr := api.ServeUnix(b)
		sups = append(sups, state.Supervisor{Name: fmt.Sprintf("sup-%d", i), Server: addr})
		cl, err := client.New(client.Config{Server: addr})
		if err != nil {
			b.Fatal(err)
		}
		clients = append(clients, cl)
	}
	con := newTestConsole(b, sups...)
	con.srv.Fleet.CheckAll(context.Background())
	return con, clients
}

// BenchmarkFleetPage renders /manage over 1,000 agents (and 1,000
// conversations) on three supervisors; BenchmarkFleetListBaseline is the
// same run's raw client.List of those objects, in parallel per supervisor.
// Both report p50_ms.
func BenchmarkFleetPage(b *testing.B) {
	con, _ := benchFleet(b, 1000)
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		code, body := con.get("/manage")
		times = append(times, time.Since(start))
		if code != http.StatusOK {
			b.Fatalf("GET /manage: %d %s", code, body)
		}
	}
	reportP50(b, times)
}

func BenchmarkFleetListBaseline(b *testing.B) {
	_, clients := benchFleet(b, 1000)
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		var wg sync.WaitGroup
		for _, cl := range clients {
			for _, res := range []string{"agents", "conversations"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := cl.List(context.Background(), res, "", client.ListOptions{}); err != nil {
						b.Error(err)
					}
				}()
			}
		}
		wg.Wait()
		times = append(times, time.Since(start))
	}
	reportP50(b, times)
}

func reportP50(b *testing.B, times []time.Duration) {
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	if len(times) > 0 {
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50_ms")
	}
}
