//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/docker/docker/api/types/container"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/guest/harness/fake/cli"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/convapi/wire"
	"aicli.dev/aicli/internal/secrets/secretwire"
)

// greetScript is the exec backend of the granted tool: it prints a hash
// derived from the secret it receives host-side, and the caller's argument.
const greetScript = `printf %s "$GREET_KEY" | sha256sum | cut -c1-16; echo "hello $1"`

// shellToolClass is a ToolClass (what a cluster admin approves) running
// script with /bin/sh on the supervisor host, with the secret greet-key as
// $GREET_KEY.
func shellToolClass(name, script string, timeoutSeconds int) string {
	b, _ := json.Marshal(map[string]any{"apiVersion": "aicli.dev/v1alpha1", "kind": "ToolClass",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"usage": name + " NAME: greets NAME", "timeoutSeconds": timeoutSeconds,
			"backend":    map[string]any{"exec": map[string]any{"command": "/bin/sh", "args": []string{"-c", script, name}}},
			"secretRefs": []any{map[string]any{"name": "greet-key", "env": "GREET_KEY"}},
		}})
	return string(b)
}

// toolGrant is a Grant named and of the tool class, to subject in namespace default.
func toolGrant(class, subject, name string) string {
	b, _ := json.Marshal(map[string]any{"apiVersion": "aicli.dev/v1alpha1", "kind": "Grant",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     map[string]any{"subject": subject, "tools": []any{map[string]any{"name": class, "className": class}}}})
	return string(b)
}

var _ = Describe("Granted tools", Label("tools"), func() {
	It("are mounted executables whose calls run host-side with secrets that never enter the container", func(ctx SpecContext) {
		dataDir := GinkgoT().TempDir()
		sup := startSpecSupervisor(ctx, dataDir, "--lease-ttl", "3s")
		var rnd [12]byte
		_, _ = rand.Read(rnd[:])
		secret := "sk-planted-" + hex.EncodeToString(rnd[:])
		sum := sha256.Sum256([]byte(secret))
		wantHash := hex.EncodeToString(sum[:])[:16]
		_, err := sup.client.DoRaw(ctx, "PUT", apischema.APIPath+"/namespaces/default/"+secretwire.Plural+"/greet-key",
			"application/octet-stream", []byte(secret))
		Expect(err).NotTo(HaveOccurred())

		sup.apply(ctx, fakeAgent("greeter"))
		sup.apply(ctx, fakeAgent("stranger"))
		for _, tool := range []struct{ name, script string }{
			{"greet", greetScript}, {"fail", "echo failing >&2; exit 7"}, {"hang", "sleep 100"},
		} {
			sup.apply(ctx, shellToolClass(tool.name, tool.script, 5))
			sup.apply(ctx, toolGrant(tool.name, "greeter", tool.name))
		}

		conv := sup.start(ctx, "greeter")
		sup.waitState(ctx, conv, "Active", "IDLE", 2*time.Minute)
		raw := attachRaw(ctx, sup, conv)

		By("a granted tool runs from the CLI's shell; its output and exit code come back")
		Expect(sup.send(ctx, conv, "please "+cli.MarkRun+" greet world")).To(Succeed())
		sup.waitReply(ctx, conv, fmt.Sprintf("run greet: exit 0: %s hello world", wantHash))
		sup.waitState(ctx, conv, "Active", "IDLE", time.Minute)
		Expect(sup.send(ctx, conv, "how "+cli.MarkRun+" greet --help")).To(Succeed())
		sup.waitReply(ctx, conv, "run greet: exit 0: greet NAME: greets NAME")
		sup.waitState(ctx, conv, "Active", "IDLE", time.Minute)
		Expect(sup.send(ctx, conv, "and "+cli.MarkRun+" fail now")).To(Succeed())
		sup.waitReply(ctx, conv, "run fail: exit 7: failing")
		sup.waitState(ctx, conv, "Active", "IDLE", time.Minute)

		By("a backend that hangs is killed at the class's timeout")
		start := time.Now()
		Expect(sup.send(ctx, conv, "wait "+cli.MarkRun+" hang")).To(Succeed())
		sup.waitReply(ctx, conv, "run hang: exit 124")
		Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second))
		sup.waitState(ctx, conv, "Active", "IDLE", time.Minute)

		By("each call is recorded on its grant and listed for the conversation")
		Eventually(func(g Gomega) {
			obj, err := sup.client.Get(ctx, "grants", "default", "greet")
			g.Expect(err).NotTo(HaveOccurred())
			calls, _, _ := unstructuredInt(obj.Object, "status", "calls")
			g.Expect(calls).To(BeNumerically(">=", 2))
			g.Expect(field(obj, "status", "lastCall", "conversation")).To(Equal(conv))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		body, err := sup.client.DoRaw(ctx, "GET", client.ResourcePath("conversations", "default", conv, "toolcalls"), "", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).To(And(ContainSubstring(`"tool":"greet"`), ContainSubstring(`"tool":"fail"`), ContainSubstring(`"exitCode":7`)))

		By("the secret is nowhere in the container, its log, its inspect data, its processes or the transcript")
		id := field(sup.conversation(ctx, conv), "status", "containerID")
		Expect(id).NotTo(BeEmpty())
		hits := scanForSecret(ctx, id, secret)
		for _, e := range sup.transcript(ctx, conv) {
			if strings.Contains(e.Text, secret) {
				hits = append(hits, "transcript entry "+fmt.Sprint(e.Cursor))
			}
		}
		if strings.Contains(raw.String(), secret) {
			hits = append(hits, "raw PTY stream")
		}
		Expect(raw.String()).To(ContainSubstring(wantHash), "the raw stream was captured")
		Expect(hits).To(BeEmpty())

		By("an agent without the grant finds no such command")
		other := sup.start(ctx, "stranger")
		sup.waitState(ctx, other, "Active", "IDLE", 2*time.Minute)
		Expect(sup.send(ctx, other, "try "+cli.MarkRun+" greet world")).To(Succeed())
		sup.waitReply(ctx, other, "run greet: command not found")
		sup.setDesired(ctx, other, "Paused")

		By("deleting a grant revokes the tool on the next call")
		_, err = sup.client.DoRaw(ctx, "DELETE", client.ResourcePath("grants", "default", "fail"), "", nil)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool {
			_, err := os.Lstat(filepath.Join(dataDir, "tools", field(sup.conversation(ctx, conv), "metadata", "uid"), "fail"))
			return os.IsNotExist(err)
		}).WithTimeout(10 * time.Second).Should(BeTrue())
		Expect(sup.send(ctx, conv, "again "+cli.MarkRun+" fail")).To(Succeed())
		sup.waitReply(ctx, conv, "run fail: command not found")

		By("a container killed with SIGKILL loses its lease within one TTL")
		Eventually(func(g Gomega) {
			obj, err := sup.client.Get(ctx, "grants", "default", "greet")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(conditionStatus(obj.Object, "LeaseHeld")).To(Equal("True"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(suite.Client.ContainerKill(ctx, id, "KILL")).To(Succeed())
		killed := time.Now()
		Eventually(func(g Gomega) {
			obj, err := sup.client.Get(ctx, "grants", "default", "greet")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(conditionStatus(obj.Object, "LeaseHeld")).To(Equal("False"))
		}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("lease lost %s after the kill\n", time.Since(killed))
		Expect(time.Since(killed)).To(BeNumerically("<", 3*time.Second+2*time.Second))
	}, SpecTimeout(6*time.Minute))
})

// rawCapture collects a conversation's raw PTY output from its attach stream.
type rawCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *rawCapture) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// attachRaw attaches read-only to conv and captures everything the PTY prints until the spec ends.
func attachRaw(ctx context.Context, sup *supervisorProc, conv string) *rawCapture {
	GinkgoHelper()
	u := "ws" + strings.TrimPrefix(sup.client.BaseURL(), "http") + client.ResourcePath("conversations", "default", conv, wire.SubAttach)
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: sup.client.HTTPClient()})
	Expect(err).NotTo(HaveOccurred())
	c.SetReadLimit(-1)
	capture := &rawCapture{}
	go func() {
		defer c.CloseNow()
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				return
			}
			capture.mu.Lock()
			capture.buf.Write(data)
			capture.mu.Unlock()
		}
	}()
	DeferCleanup(func() { _ = c.Close(websocket.StatusNormalClosure, "") })
	return capture
}

// scanForSecret looks for secret in everything of a running container: its
// inspect data, its log, its exported filesystem, every file under its
// mounts, and the environment of every process in its PID namespace. It
// returns where it was found.
func scanForSecret(ctx context.Context, id, secret string) []string {
	GinkgoHelper()
	var hits []string
	raw, err := suite.Runtime.InspectRaw(ctx, id)
	Expect(err).NotTo(HaveOccurred())
	inspect, err := json.Marshal(raw)
	Expect(err).NotTo(HaveOccurred())
	if bytes.Contains(inspect, []byte(secret)) {
		hits = append(hits, "docker inspect")
	}
	logs, err := suite.Client.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	Expect(err).NotTo(HaveOccurred())
	logData, _ := io.ReadAll(logs)
	_ = logs.Close()
	if bytes.Contains(logData, []byte(secret)) {
		hits = append(hits, "container log")
	}
	export, err := suite.Client.ContainerExport(ctx, id)
	Expect(err).NotTo(HaveOccurred())
	tarData, _ := io.ReadAll(export)
	_ = export.Close()
	Expect(len(tarData)).To(BeNumerically(">", 0))
	if bytes.Contains(tarData, []byte(secret)) {
		hits = append(hits, "container filesystem")
	}
	for _, m := range raw.Mounts {
		_ = filepath.WalkDir(m.Source, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(secret)) {
				hits = append(hits, "mounted file "+p)
			}
			return nil
		})
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", raw.State.Pid))
	Expect(err).NotTo(HaveOccurred())
	procs, _ := os.ReadDir("/proc")
	seen := 0
	for _, p := range procs {
		if link, err := os.Readlink(filepath.Join("/proc", p.Name(), "ns", "pid")); err != nil || link != ns {
			continue
		}
		seen++
		for _, f := range []string{"environ", "cmdline"} {
			if b, err := os.ReadFile(filepath.Join("/proc", p.Name(), f)); err == nil && bytes.Contains(b, []byte(secret)) {
				hits = append(hits, "/proc/"+p.Name()+"/"+f)
			}
		}
	}
	Expect(seen).To(BeNumerically(">=", 2), "the guest and its CLI are in the container's PID namespace")
	return hits
}

func unstructuredInt(obj map[string]any, path ...string) (int64, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false, nil
		}
		cur = m[p]
	}
	switch v := cur.(type) {
	case int64:
		return v, true, nil
	case float64:
		return int64(v), true, nil
	}
	return 0, false, nil
}

// conditionStatus is the status of the object's condition of type typ ("" when absent).
func conditionStatus(obj map[string]any, typ string) string {
	status, _ := obj["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}
