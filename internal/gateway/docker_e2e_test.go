//go:build e2e

package gateway_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"

	"aicli.dev/aicli/internal/gateway"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/runtime/docker"
)

// TestDockerGuest runs a real guest binary in a hardened --network none container (through the supervisor's
// Docker runtime) with the conversation directory bind-mounted, and checks admission, the scrubbed token, a
// request over the side channel, and reconnection through the directory mount after a gateway restart.
// Run: go test -tags e2e -run TestDockerGuest ./internal/gateway (Docker must be running: hack/ensure-docker.sh).
func TestDockerGuest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rt, cli, err := docker.NewFromEnv(docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	if err := rt.Ping(ctx); err != nil {
		t.Fatalf("Docker is required for this test (run hack/ensure-docker.sh): %v", err)
	}
	runID := fmt.Sprintf("gw-e2e-%d", time.Now().UnixNano())
	labels := map[string]string{"aicli.dev/test": "1", "aicli.dev/test-run": runID}
	t.Cleanup(func() { removeByLabel(t, rt, labels) })

	// A FROM-scratch image holding only the static guest binary.
	bin := filepath.Join(t.TempDir(), "guest")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./testdata/e2eguest")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build guest: %v\n%s", err, out)
	}
	tag := "aicli-gateway-e2e:" + runID
	buildImage(ctx, t, cli, bin, tag, labels)
	t.Cleanup(func() {
		// The containers go first: an image a container still uses would only be untagged, left dangling.
		removeByLabel(t, rt, labels)
		_, _ = cli.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true, PruneChildren: true})
	})

	e := newEnv(t)
	l, err := e.g.Prepare(ctx, "conv-docker")
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for k, v := range l.Env {
		env = append(env, k+"="+v)
	}
	id, err := rt.Create(ctx, runtime.ContainerSpec{
		Name:   runID,
		Image:  tag,
		Labels: labels,
		Env:    env,
		Mounts: []runtime.Mount{{HostPath: l.HostDir, ContainerPath: l.ContainerDir}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx, id); err != nil {
		t.Fatal(err)
	}

	gc := waitGuestCtx(ctx, t, e.g, "conv-docker")
	who := whoami(t, gc)
	if who.Conversation != "conv-docker" || who.TokenInEnv || who.UID != 0 {
		t.Fatalf("guest sees %+v", who)
	}
	fp := gc.GuestFingerprint()

	// Supervisor restart: the new socket file appears in the mounted directory and the guest re-dials.
	if err := e.g.Close(); err != nil {
		t.Fatal(err)
	}
	e.g = e.newGateway()
	if _, err := e.g.Prepare(ctx, "conv-docker"); err != nil {
		t.Fatal(err)
	}
	gc2 := waitGuestCtx(ctx, t, e.g, "conv-docker")
	if gc2.GuestFingerprint() != fp {
		t.Fatalf("guest key changed across reconnect")
	}
	if who := whoami(t, gc2); who.Conversation != "conv-docker" {
		t.Fatalf("after reconnect: %+v", who)
	}
	if st := e.g.Stats(); st.Reconnected != 1 {
		t.Fatalf("stats %+v", st)
	}

	// The launch token never shows up in the container's logs.
	rc, err := rt.Logs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	logs, _ := io.ReadAll(rc)
	_ = rc.Close()
	if strings.Contains(string(logs), l.Env["AICLI_LAUNCH_TOKEN"]) {
		t.Fatal("launch token in container logs")
	}
	if !strings.Contains(string(logs), "connected to supervisor") {
		t.Fatalf("guest logs lack the connect line:\n%s", logs)
	}
}

type who struct {
	Conversation string `json:"conversation"`
	UID          int    `json:"uid"`
	TokenInEnv   bool   `json:"tokenInEnv"`
}

func whoami(t *testing.T, gc *gateway.GuestConn) who {
	t.Helper()
	var w who
	if err := json.Unmarshal([]byte(get(t, gc, "/whoami")), &w); err != nil {
		t.Fatal(err)
	}
	return w
}

func waitGuestCtx(ctx context.Context, t *testing.T, g *gateway.Gateway, conv string) *gateway.GuestConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	gc, err := g.WaitGuest(ctx, conv)
	if err != nil {
		t.Fatalf("WaitGuest: %v", err)
	}
	return gc
}

func buildImage(ctx context.Context, t *testing.T, cli interface {
	ImageBuild(context.Context, io.Reader, build.ImageBuildOptions) (build.ImageBuildResponse, error)
}, bin, tag string, labels map[string]string) {
	t.Helper()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		body []byte
	}{
		{"Dockerfile", 0o644, []byte("FROM scratch\nCOPY guest /guest\nENTRYPOINT [\"/guest\"]\n")},
		{"guest", 0o755, data},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.ImageBuild(ctx, &buf, build.ImageBuildOptions{
		Tags: []string{tag}, Version: build.BuilderV1, Remove: true, ForceRemove: true, Labels: labels,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatal(err)
		}
		if m.Error != "" {
			t.Fatalf("image build: %s", m.Error)
		}
	}
}

func removeByLabel(t *testing.T, rt *docker.Runtime, labels map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := rt.List(ctx, labels)
	if err != nil {
		t.Errorf("list test containers: %v", err)
		return
	}
	for _, c := range cs {
		if err := rt.Remove(ctx, c.ID); err != nil {
			t.Errorf("remove %s: %v", c.ID, err)
		}
	}
}
