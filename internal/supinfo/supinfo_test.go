package supinfo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/runtime/fake"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/supinfo"
	"aicli.dev/aicli/internal/supinfo/infowire"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

const supID = "sup-test"

// startContainer runs a container of conversation ns/agent/conv owned by supID.
func startContainer(t *testing.T, rt *fake.Runtime, ns, agent, conv string) string {
	t.Helper()
	ctx := context.Background()
	id, err := rt.Create(ctx, runtime.ContainerSpec{Name: conv, Image: "img", Labels: map[string]string{
		runtime.LabelSupervisor: supID, runtime.LabelNamespace: ns, runtime.LabelAgent: agent, runtime.LabelConversation: conv}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// conversation stores ns/name with observed state and GuestConnected status.
func conversation(t *testing.T, srv *apiservertest.Server, ns, name string, state v1alpha1.ConversationState, guest string) {
	t.Helper()
	c := &v1alpha1.Conversation{Spec: v1alpha1.ConversationSpec{AgentRef: "coder"}}
	c.Namespace, c.Name = ns, name
	if err := storeclient.New(srv.Store).Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	srv.Mutate(t, "conversations", ns, name, func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, string(state), "status", "state")
		_ = unstructured.SetNestedSlice(o.Object, []any{map[string]any{"type": v1alpha1.ConditionGuestConnected, "status": guest,
			"reason": "Test", "message": "", "lastTransitionTime": "2026-12-06T00:00:00Z"}}, "status", "conditions")
	})
}

func TestInfo(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)}
	rt := fake.New(fake.WithClock(clk.Now))
	srv := apiservertest.New(t)
	agents := filepath.Join(t.TempDir(), "agents")
	for p, size := range map[string]int{"default/coder/home/a.txt": 1000, "team/x/workspace/b.bin": 234} {
		p = filepath.Join(agents, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	started := clk.Now().Add(-time.Hour)
	supinfo.New(supinfo.Options{SupervisorID: supID, Started: started, Store: srv.Store, Containers: rt, AgentsDir: agents,
		Images: func(context.Context) ([]infowire.Image, error) {
			return []infowire.Image{{Ref: "aicli-guest-fake:1", Harness: "fake", SizeBytes: 10}, {Ref: "aicli-guest-codex:2", Harness: "codex", SizeBytes: 20}}, nil
		}, Now: clk.Now}).Mount(srv.API)

	a := startContainer(t, rt, "default", "coder", "c1")
	b := startContainer(t, rt, "team", "x", "t1")
	stopped := startContainer(t, rt, "default", "coder", "old")
	if err := rt.Stop(context.Background(), stopped, time.Second); err != nil {
		t.Fatal(err)
	}
	other, err := rt.Create(context.Background(), runtime.ContainerSpec{Name: "other", Image: "img",
		Labels: map[string]string{runtime.LabelSupervisor: "sup-other"}})
	if err != nil || rt.Start(context.Background(), other) != nil {
		t.Fatal(err)
	}
	if err := errors.Join(rt.SetStats(a, 2e9, 100<<20), rt.SetStats(b, 5e9, 50<<20)); err != nil {
		t.Fatal(err)
	}
	conversation(t, srv, "default", "c1", v1alpha1.ConversationActive, "True")
	conversation(t, srv, "default", "c2", v1alpha1.ConversationActive, "False")
	conversation(t, srv, "team", "t1", v1alpha1.ConversationActive, "True")
	conversation(t, srv, "team", "t2", v1alpha1.ConversationPaused, "False")
	clk.Add(10 * time.Second)

	url, ca := srv.ServeTLS(t, map[string][]string{"admin-token": {"*"}, "team-token": {"team"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	as := func(tok string) *client.Client {
		c, err := client.New(client.Config{Server: url, Token: tok, CAFile: ca})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	admin, team := as("admin-token"), as("team-token")

	info, err := admin.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.SupervisorID != supID || info.Version == "" || !info.StartTime.Equal(started) || info.UptimeSeconds != 3610 ||
		!info.Ready || info.Restricted {
		t.Fatalf("identity: %+v", info)
	}
	cp := info.Capacity
	if cp.LiveConversations != 2 || len(cp.Containers) != 2 || cp.StatsError != "" || !cp.SampledAt.Equal(clk.Now()) {
		t.Fatalf("capacity: %+v", cp)
	}
	// No earlier sample: CPU is averaged since the container started (2 s of CPU in 10 s is 20 %).
	if c := cp.Containers[0]; c.Name != "c1" || c.Namespace != "default" || c.Agent != "coder" || c.Conversation != "c1" ||
		c.CPUPercent != 20 || c.MemoryBytes != 100<<20 {
		t.Fatalf("container c1: %+v", c)
	}
	if cp.CPUPercent != 70 || cp.MemoryBytes != 150<<20 {
		t.Fatalf("totals: cpu %v mem %d", cp.CPUPercent, cp.MemoryBytes)
	}
	if d := cp.Disk; d == nil || d.HomesBytes != 1234 || d.ImagesBytes != 30 || len(d.Images) != 2 || d.Error != "" {
		t.Fatalf("disk: %+v", d)
	}

	// Within the cache period the same sampling answers; after it, CPU is measured since the previous sample.
	if err := rt.SetStats(a, 3e9, 80<<20); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Second)
	if info, err = admin.Info(ctx); err != nil || info.Capacity.Containers[0].CPUPercent != 20 {
		t.Fatalf("cached: %+v %v", info, err)
	}
	clk.Add(3 * time.Second)
	if info, err = admin.Info(ctx); err != nil || info.Capacity.Containers[0].CPUPercent != 20 ||
		info.Capacity.Containers[0].MemoryBytes != 80<<20 {
		t.Fatalf("resampled: %+v %v", info, err)
	}

	// A token bound to a namespace sees the live count, its own containers and no disk.
	info, err = team.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Restricted || info.Capacity.LiveConversations != 2 || len(info.Capacity.Containers) != 1 ||
		info.Capacity.Containers[0].Namespace != "team" || info.Capacity.CPUPercent != info.Capacity.Containers[0].CPUPercent ||
		info.Capacity.Disk != nil {
		t.Fatalf("restricted: %+v", info)
	}

	// A container that cannot be sampled is reported, not dropped.
	clk.Add(10 * time.Second)
	rt.FailNext(fake.OpStats, errors.New("engine busy"))
	if info, err = admin.Info(ctx); err != nil || info.Capacity.StatsError != "1 of 2 containers could not be sampled" ||
		len(info.Capacity.Containers) != 2 {
		t.Fatalf("stats failure: %+v %v", info.Capacity, err)
	}

	if _, err := as("wrong").Info(ctx); !apierrors.IsUnauthorized(err) {
		t.Fatalf("bad token: %v", err)
	}
}
