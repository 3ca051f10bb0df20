package docker

import (
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/mount"

	"aicli.dev/aicli/internal/runtime"
)

func TestHostConfigDefaults(t *testing.T) {
	r := New(nil, Options{})
	hc := r.HostConfig(runtime.ContainerSpec{
		Mounts: []runtime.Mount{
			{HostPath: "/h/home", ContainerPath: "/home/agent"},
			{HostPath: "/h/tools", ContainerPath: "/opt/aicli/bin", ReadOnly: true},
		},
	})
	if hc.NetworkMode != "none" {
		t.Errorf("network %q, want none", hc.NetworkMode)
	}
	if !slices.Equal(hc.SecurityOpt, []string{"no-new-privileges"}) {
		t.Errorf("security opts %v", hc.SecurityOpt)
	}
	if !slices.Equal([]string(hc.CapDrop), []string{"ALL"}) || !slices.Equal([]string(hc.CapAdd), GuestCapabilities) {
		t.Errorf("caps drop %v add %v", hc.CapDrop, hc.CapAdd)
	}
	if hc.Memory != DefaultMemoryBytes || hc.MemorySwap != DefaultMemoryBytes {
		t.Errorf("memory %d swap %d", hc.Memory, hc.MemorySwap)
	}
	if hc.PidsLimit == nil || *hc.PidsLimit != DefaultPidsLimit {
		t.Errorf("pids %v", hc.PidsLimit)
	}
	if !hc.ReadonlyRootfs || hc.Tmpfs["/tmp"] != DefaultTmpfsOptions {
		t.Errorf("rootfs ro %v tmpfs %v", hc.ReadonlyRootfs, hc.Tmpfs)
	}
	if hc.Init == nil || *hc.Init {
		t.Errorf("init %v, want explicit false", hc.Init)
	}
	if hc.Privileged || hc.NanoCPUs != 0 {
		t.Errorf("privileged %v cpus %d", hc.Privileged, hc.NanoCPUs)
	}
	want := []mount.Mount{
		{Type: mount.TypeBind, Source: "/h/home", Target: "/home/agent"},
		{Type: mount.TypeBind, Source: "/h/tools", Target: "/opt/aicli/bin", ReadOnly: true},
	}
	if len(hc.Mounts) != 2 || hc.Mounts[0] != want[0] || hc.Mounts[1] != want[1] {
		t.Errorf("mounts %+v", hc.Mounts)
	}
	// The returned config does not alias the package default.
	hc.CapAdd[0] = "SYS_ADMIN"
	if GuestCapabilities[0] == "SYS_ADMIN" {
		t.Fatal("HostConfig aliased GuestCapabilities")
	}
}

func TestHostConfigOverrides(t *testing.T) {
	r := New(nil, Options{CapAdd: []string{}, WritableRootfs: true})
	hc := r.HostConfig(runtime.ContainerSpec{Network: "bridge", MemoryBytes: 1 << 20, PidsLimit: 7, NanoCPUs: 5e8})
	if hc.NetworkMode != "bridge" || hc.Memory != 1<<20 || *hc.PidsLimit != 7 || hc.NanoCPUs != 5e8 {
		t.Errorf("spec values not applied: %+v", hc)
	}
	if len(hc.CapAdd) != 0 || hc.ReadonlyRootfs || hc.Tmpfs != nil {
		t.Errorf("options not applied: caps %v ro %v tmpfs %v", hc.CapAdd, hc.ReadonlyRootfs, hc.Tmpfs)
	}
	// Hardening that no option turns off.
	if !slices.Contains(hc.SecurityOpt, "no-new-privileges") || hc.CapDrop[0] != "ALL" || *hc.Init {
		t.Errorf("hardening lost: %+v", hc)
	}
}

func TestLabelFilters(t *testing.T) {
	f := labelFilters(map[string]string{"a": "1", "b": ""})
	got := f.Get("label")
	slices.Sort(got)
	if !slices.Equal(got, []string{"a=1", "b"}) {
		t.Fatalf("label filters %v", got)
	}
}

func TestEventOf(t *testing.T) {
	ev := eventOf(events.Message{
		Type: events.ContainerEventType, Action: events.ActionDie, TimeNano: 1_700_000_000_123_000_000,
		Actor: events.Actor{ID: "abc", Attributes: map[string]string{
			"name": "c1", "image": "img:1", "exitCode": "143", "aicli.dev/agent": "x",
		}},
	})
	if ev.Type != runtime.EventDie || ev.ID != "abc" || ev.Name != "c1" || ev.ExitCode != 143 {
		t.Fatalf("event %+v", ev)
	}
	if len(ev.Labels) != 1 || ev.Labels["aicli.dev/agent"] != "x" {
		t.Fatalf("labels %v", ev.Labels)
	}
	if !ev.Time.Equal(time.Unix(0, 1_700_000_000_123_000_000)) {
		t.Fatalf("time %v", ev.Time)
	}
}

func TestStateOf(t *testing.T) {
	st := stateOf(container.InspectResponse{
		ContainerJSONBase: &container.ContainerJSONBase{
			ID: "id1", Name: "/c1", Image: "sha256:abc", Created: "2026-12-02T10:00:00.5Z",
			State: &container.State{Status: "exited", ExitCode: 3, StartedAt: "2026-12-02T10:00:01Z",
				FinishedAt: "0001-01-01T00:00:00Z"},
		},
		Config: &container.Config{Image: "aicli-guest-fake:123", Labels: map[string]string{"k": "v"}},
	})
	if st.ID != "id1" || st.Name != "c1" || st.Image != "aicli-guest-fake:123" || st.Labels["k"] != "v" {
		t.Fatalf("state %+v", st)
	}
	if st.Status != "exited" || st.ExitCode != 3 || st.Running {
		t.Fatalf("state %+v", st)
	}
	if st.CreatedAt.IsZero() || st.StartedAt.IsZero() || !st.FinishedAt.IsZero() {
		t.Fatalf("times: created %v started %v finished %v", st.CreatedAt, st.StartedAt, st.FinishedAt)
	}
}
