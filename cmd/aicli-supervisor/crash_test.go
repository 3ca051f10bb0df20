package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"encoding/json"

	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/store"
)

var supervisorBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "aicli-supervisor-bin-")
	if err != nil {
		panic(err)
	}
	supervisorBin = filepath.Join(dir, "aicli-supervisor")
	out, err := exec.Command("go", "build", "-o", supervisorBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the supervisor: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type ack struct {
	name string
	rv   uint64
}

// TestKill9LosesNoAcknowledgedWrite runs the real supervisor binary, streams
// concurrent creates and updates at it over the unix socket, kills it with
// SIGKILL mid-stream and checks every acknowledged write in the reopened store.
func TestKill9LosesNoAcknowledgedWrite(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprintf("round%d", round), func(t *testing.T) {
			dataDir := t.TempDir()
			cmd := exec.Command(supervisorBin, "--data-dir", dataDir)
			cmd.Stderr = io.Discard
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			client := waitForSocket(t, layout.Dir(dataDir).Socket())

			var mu sync.Mutex
			acked := map[string]uint64{}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						name := fmt.Sprintf("w%d-%d", w, i)
						a, err := apply(client, name, "")
						if err != nil {
							return // the supervisor is gone
						}
						mu.Lock()
						acked[a.name] = a.rv
						mu.Unlock()
						if i%3 == 0 {
							a, err := apply(client, name, "m2")
							if err != nil {
								return
							}
							mu.Lock()
							acked[a.name] = a.rv
							mu.Unlock()
						}
					}
				}()
			}
			time.Sleep(time.Duration(700+300*round) * time.Millisecond)
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			close(stop)
			wg.Wait()
			if len(acked) < 50 {
				t.Fatalf("only %d writes acknowledged before the kill: the stream was too slow to prove anything", len(acked))
			}

			st, err := store.Open(layout.Dir(dataDir).Store(), store.Options{})
			if err != nil {
				t.Fatalf("reopening the store after kill -9: %v", err)
			}
			defer st.Close()
			for name, rv := range acked {
				obj, err := st.Get(context.Background(), "agents", "default", name)
				if err != nil {
					t.Fatalf("acknowledged write of %s (rv %d) lost: %v", name, rv, err)
				}
				got, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
				if got < rv {
					t.Fatalf("%s: stored rv %d older than acknowledged %d", name, got, rv)
				}
			}
			t.Logf("%d acknowledged writes, all present after kill -9", len(acked))
		})
	}
}

func waitForSocket(t testing.TB, path string) *http.Client {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: 64,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}}}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := c.Get("http://supervisor/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return c
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("supervisor did not become ready")
	return nil
}

// apply creates the agent, or updates its model when model is set.
func apply(c *http.Client, name, model string) (ack, error) {
	body := fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":%q},"spec":{"harness":"fake","model":%q}}`, name, model)
	method, url := "POST", "http://supervisor/apis/aicli.dev/v1alpha1/namespaces/default/agents"
	if model != "" {
		method, url = "PUT", url+"/"+name
	}
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := c.Do(req)
	if err != nil {
		return ack{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(resp.Body)
		return ack{}, fmt.Errorf("%s %s: %d %s", method, name, resp.StatusCode, b)
	}
	var obj struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&obj); err != nil {
		return ack{}, err
	}
	rv, err := strconv.ParseUint(obj.Metadata.ResourceVersion, 10, 64)
	return ack{name: name, rv: rv}, err
}
