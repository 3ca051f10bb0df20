package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/store"
)

// BenchmarkIdleRSS reports the resident memory of an idle supervisor that
// homes 100 agents (target < 60 MiB).
func BenchmarkIdleRSS(b *testing.B) {
	for range b.N {
		dataDir := b.TempDir()
		cmd := startBinary(b, dataDir)
		client := waitForSocket(b, layout.Dir(dataDir).Socket())
		for i := range 100 {
			if _, err := apply(client, fmt.Sprintf("idle-%d", i), ""); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(3 * time.Second)
		b.ReportMetric(rssMiB(b, cmd.Process.Pid), "RSS-MiB")
		stopBinary(cmd)
	}
}

// BenchmarkColdStart100k reports the time from starting the supervisor on a
// store of 100k events to its first served GET (target < 1 s).
func BenchmarkColdStart100k(b *testing.B) {
	dataDir := b.TempDir()
	populate(b, layout.Dir(dataDir).Store(), 100_000)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		cmd := startBinary(b, dataDir)
		client := waitForSocket(b, layout.Dir(dataDir).Socket())
		resp, err := client.Get("http://supervisor/apis/aicli.dev/v1alpha1/namespaces/default/agents/a-0")
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("first GET: %v %v", err, resp)
		}
		resp.Body.Close()
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms-to-first-GET")
		stopBinary(cmd)
	}
}

// populate writes n events: 20% creates, the rest spec updates.
func populate(b *testing.B, dir string, n int) {
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	objects := n / 5
	var wg sync.WaitGroup
	work := make(chan int)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				name := fmt.Sprintf("a-%d", i%objects)
				obj := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "aicli.dev/v1alpha1", "kind": "Agent",
					"metadata": map[string]any{"name": name, "namespace": "default"},
					"spec":     map[string]any{"harness": "fake", "model": strconv.Itoa(i)},
				}}
				if i < objects {
					_, err = st.Create(context.Background(), "agents", obj)
				} else {
					_, err = st.Update(context.Background(), "agents", obj)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	for i := range objects {
		work <- i
	}
	for i := objects; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
}

func startBinary(b *testing.B, dataDir string) *exec.Cmd {
	cmd := exec.Command(supervisorBin, "--data-dir", dataDir)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return cmd
}

func stopBinary(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
}

func rssMiB(b *testing.B, pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
