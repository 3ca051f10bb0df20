//go:build e2e

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/e2e/framework"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// supervisorBins returns the suite's guest-artifact directory with the
// supervisor built next to the guest binaries its image definitions copy (the
// supervisor's default artifact dir is its own directory). Suite.Close
// removes the directory.
func supervisorBins(ctx context.Context) string {
	GinkgoHelper()
	dir, err := suite.GuestArtifacts(ctx)
	Expect(err).NotTo(HaveOccurred())
	if _, err := os.Stat(filepath.Join(dir, "aicli-supervisor")); err == nil {
		return dir
	}
	Expect(framework.BuildBinaries(ctx, suite.Root, dir, map[string]string{
		"aicli-supervisor": "./cmd/aicli-supervisor",
	})).To(Succeed())
	return dir
}

// supervisorProc is a real aicli-supervisor process on its own data dir.
type supervisorProc struct {
	dataDir string
	cmd     *exec.Cmd
	log     *os.File
	client  *client.Client
	id      string
}

// startSupervisor runs the supervisor binary on dataDir and waits until it serves.
func startSupervisor(ctx context.Context, dataDir string, extraArgs ...string) *supervisorProc {
	GinkgoHelper()
	bins := supervisorBins(ctx)
	logFile, err := os.OpenFile(filepath.Join(dataDir, "supervisor.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(filepath.Join(bins, "aicli-supervisor"), append([]string{"--data-dir", dataDir, "--log-format", "text"}, extraArgs...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	Expect(cmd.Start()).To(Succeed())
	c, err := client.New(client.Config{Server: "unix://" + layout.Dir(dataDir).Socket(), Timeout: 30 * time.Second})
	Expect(err).NotTo(HaveOccurred())
	p := &supervisorProc{dataDir: dataDir, cmd: cmd, log: logFile, client: c}
	Eventually(func() error {
		_, err := c.DoRaw(ctx, "GET", "/readyz", "", nil)
		return err
	}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	id, err := os.ReadFile(layout.Dir(dataDir).SupervisorID())
	Expect(err).NotTo(HaveOccurred())
	p.id = strings.TrimSpace(string(id))
	return p
}

// kill9 ends the supervisor with SIGKILL.
// startSpecSupervisor starts a supervisor whose cleanup, registered on the
// spec, stops it (dumping its log when the spec failed) and removes its containers.
func startSpecSupervisor(ctx context.Context, dataDir string, extraArgs ...string) *supervisorProc {
	GinkgoHelper()
	sup := startSupervisor(ctx, dataDir, extraArgs...)
	DeferCleanup(func(ctx SpecContext) {
		if CurrentSpecReport().Failed() {
			sup.dumpLog()
		}
		sup.stop()
		sup.removeContainers(ctx)
	})
	return sup
}

func (p *supervisorProc) kill9() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = p.cmd.Process.Wait()
}

// stop ends the supervisor with SIGTERM.
func (p *supervisorProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _, _ = p.cmd.Process.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		p.kill9()
	}
	p.log.Close()
}

// containers lists the containers this supervisor labeled.
func (p *supervisorProc) containers(ctx context.Context) []runtime.ContainerState {
	GinkgoHelper()
	states, err := suite.Runtime.List(ctx, map[string]string{runtime.LabelSupervisor: p.id})
	Expect(err).NotTo(HaveOccurred())
	return states
}

// removeContainers is the cleanup backstop: it removes every container of this supervisor.
func (p *supervisorProc) removeContainers(ctx context.Context) {
	states, err := suite.Runtime.List(ctx, map[string]string{runtime.LabelSupervisor: p.id})
	if err != nil {
		return
	}
	for _, st := range states {
		_ = suite.Runtime.Remove(ctx, st.ID)
	}
}

func (p *supervisorProc) dumpLog() {
	data, _ := os.ReadFile(filepath.Join(p.dataDir, "supervisor.log"))
	lines := strings.Split(string(data), "\n")
	if len(lines) > 80 {
		lines = lines[len(lines)-80:]
	}
	GinkgoWriter.Printf("--- supervisor log (tail) ---\n%s\n", strings.Join(lines, "\n"))
}

func (p *supervisorProc) apply(ctx context.Context, body string) {
	GinkgoHelper()
	var obj unstructured.Unstructured
	Expect(json.Unmarshal([]byte(body), &obj.Object)).To(Succeed())
	_, err := p.client.Create(ctx, &obj, client.WriteOptions{})
	Expect(err).NotTo(HaveOccurred())
}

func (p *supervisorProc) conversation(ctx context.Context, name string) *unstructured.Unstructured {
	GinkgoHelper()
	obj, err := p.client.Get(ctx, "conversations", "default", name)
	Expect(err).NotTo(HaveOccurred())
	return obj
}

func field(obj *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, path...)
	return s
}

// start calls "start or continue" for agent and returns the conversation name.
func (p *supervisorProc) start(ctx context.Context, agent string) string {
	GinkgoHelper()
	body, err := p.client.DoRaw(ctx, "POST", client.ResourcePath("agents", "default", agent, "start"), "application/json", []byte("{}"))
	Expect(err).NotTo(HaveOccurred())
	var obj map[string]any
	Expect(json.Unmarshal(body, &obj)).To(Succeed())
	return obj["metadata"].(map[string]any)["name"].(string)
}

func (p *supervisorProc) send(ctx context.Context, conv, text string) error {
	b, _ := json.Marshal(map[string]string{"text": text})
	_, err := p.client.DoRaw(ctx, "POST", client.ResourcePath("conversations", "default", conv, "send"), "application/json", b)
	return err
}

func (p *supervisorProc) setDesired(ctx context.Context, conv, state string) {
	GinkgoHelper()
	_, err := p.client.DoRaw(ctx, "PATCH", client.ResourcePath("conversations", "default", conv), "application/merge-patch+json",
		[]byte(fmt.Sprintf(`{"spec":{"desiredState":%q}}`, state)))
	Expect(err).NotTo(HaveOccurred())
}

func (p *supervisorProc) transcript(ctx context.Context, conv string) []transcriptwire.Entry {
	GinkgoHelper()
	body, err := p.client.DoRaw(ctx, "GET", client.ResourcePath("conversations", "default", conv, "transcript")+"?from=1&limit=5000", "", nil)
	Expect(err).NotTo(HaveOccurred())
	var out struct {
		Items []transcriptwire.Entry `json:"items"`
	}
	Expect(json.Unmarshal(body, &out)).To(Succeed())
	return out.Items
}

// waitState waits until the conversation's observed state and execution match.
func (p *supervisorProc) waitState(ctx context.Context, conv, state, execution string, timeout time.Duration) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		obj, err := p.client.Get(ctx, "conversations", "default", conv)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(field(obj, "status", "state")).To(Equal(state), "status: %v", obj.Object["status"])
		if execution != "" {
			g.Expect(field(obj, "status", "execution")).To(Equal(execution))
		}
	}).WithTimeout(timeout).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// waitReply waits for an agent transcript entry containing text.
func (p *supervisorProc) waitReply(ctx context.Context, conv, text string) transcriptwire.Entry {
	GinkgoHelper()
	var found transcriptwire.Entry
	Eventually(func() bool {
		for _, e := range p.transcript(ctx, conv) {
			if e.Speaker == transcriptwire.SpeakerAgent && strings.Contains(e.Text, text) {
				found = e
				return true
			}
		}
		return false
	}).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(BeTrue(), "no agent reply containing %q", text)
	return found
}

func fakeAgent(name string) string {
	return fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":%q,"namespace":"default"},"spec":{"harness":"fake","env":[{"name":"AICLI_FAKE_DELAY","value":"50ms"}]}}`, name)
}
