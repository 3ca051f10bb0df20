package controllers

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	scwire "aicli.dev/aicli/guest/sidechannel/wire"
	"aicli.dev/aicli/internal/liveguest"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/daemon"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/sidechannel"
	"aicli.dev/aicli/internal/egress"
	"aicli.dev/aicli/internal/gateway"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/runtime/fake"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/storeclient"
)

// fakeCLI is the scripted stand-in CLI, built once for the package's tests.
var fakeCLI string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "aicli-ctrl-bin-")
	if err != nil {
		panic(err)
	}
	fakeCLI = filepath.Join(dir, "aicli-fake-cli")
	if out, err := exec.Command("go", "build", "-o", fakeCLI, "../cmd/aicli-fake-cli").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the fake CLI: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fixedImage is the image seam: the fake runtime needs no build.
type fixedImage struct{}

func (fixedImage) Ensure(context.Context, string, func(string)) (string, error) {
	return "aicli-guest-fake:test", nil
}

// convEnv is the conversation controller wired to a real store, the real
// side-channel gateway and the fake runtime, whose "containers" run the real
// guest daemon in-process (the CLI is the real fake CLI under a real PTY).
type convEnv struct {
	*harness
	rt       *fake.Runtime
	egress   *policyRecorder
	sessions *liveguest.Registry
}

// policyRecorder records the egress policies the controller installs.
type policyRecorder struct {
	mu       sync.Mutex
	policies map[string]egress.Policy
}

func (p *policyRecorder) SetPolicy(uid string, pol egress.Policy) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.policies[uid] = pol
}

func (p *policyRecorder) RemovePolicy(uid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.policies, uid)
}

func (p *policyRecorder) get(uid string) (egress.Policy, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pol, ok := p.policies[uid]
	return pol, ok
}

func startConversations(t *testing.T, mods ...func(*Options)) *convEnv {
	t.Helper()
	base, err := os.MkdirTemp("", "cv") // short: the side-channel socket path must fit in 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	dir := layout.Dir(base)
	st, err := store.Open(dir.Store(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	gw, err := gateway.New(gateway.Options{DataDir: base, Tokens: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	rt := fake.New(fake.WithImages("aicli-guest-fake:test"), fake.WithProcess(inProcessGuest(t)))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		for _, c := range rt.Specs() {
			_ = c // containers end with ctx
		}
		gw.Close()
		st.Close()
	})
	rec := &policyRecorder{policies: map[string]egress.Policy{}}
	sessions := &liveguest.Registry{}
	opts := Options{Store: st, DataDir: dir, SupervisorID: "sup-test", Logger: log, SkipNameValidation: true,
		Runtime: rt, Images: fixedImage{}, Gateway: gw, Egress: rec, Sessions: sessions}
	for _, m := range mods {
		m(&opts)
	}
	err = Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &convEnv{harness: &harness{t: t, store: st, client: storeclient.New(st), dir: dir}, rt: rt, egress: rec, sessions: sessions}
}

// inProcessGuest runs the guest daemon's supervised mode as the container's
// process, translating the container paths of its bind mounts to host paths.
func inProcessGuest(t *testing.T) fake.ProcessFunc {
	return func(ctx context.Context, p fake.Process) int {
		hostPath := func(containerPath string) string {
			for _, m := range p.Spec.Mounts {
				if rest, ok := strings.CutPrefix(containerPath, m.ContainerPath); ok {
					return m.HostPath + rest
				}
			}
			return containerPath
		}
		env := map[string]string{}
		for _, kv := range p.Spec.Env {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		boot := sidechannel.Bootstrap{
			SocketPath:            hostPath(env[scwire.EnvSocket]),
			SupervisorFingerprint: env[scwire.EnvFingerprint],
			ConversationID:        env[scwire.EnvConversationID],
			LaunchToken:           env[scwire.EnvLaunchToken],
		}
		devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return 1
		}
		defer devnull.Close()
		d := &daemon.Daemon{
			Config: daemon.Config{Harness: "fake", FakeCLI: fakeCLI, Home: hostPath(guestHome), WorkDir: hostPath(guestWorkspace),
				StopGrace: 2 * time.Second, ExitLinger: 300 * time.Millisecond},
			Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
			Stdout: devnull,
		}
		return d.RunSupervised(ctx, boot)
	}
}

func (e *convEnv) conversation(name string) *v1alpha1.Conversation {
	c := &v1alpha1.Conversation{}
	if err := e.client.Get(context.Background(), "default", name, c); err != nil {
		return nil
	}
	return c
}

func (e *convEnv) waitConv(what, name string, cond func(*v1alpha1.Conversation) bool) *v1alpha1.Conversation {
	e.t.Helper()
	var c *v1alpha1.Conversation
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c = e.conversation(name); c != nil && cond(c) {
			return c
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s; conversation: %+v", what, c)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *convEnv) setDesired(name string, state v1alpha1.ConversationState) {
	e.t.Helper()
	for range 50 {
		c := e.conversation(name)
		c.Spec.DesiredState = state
		if err := e.client.Update(context.Background(), c); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("could not set %s to %s", name, state)
}

func (e *convEnv) running() []runtime.ContainerState {
	states, _ := e.rt.List(context.Background(), map[string]string{runtime.LabelSupervisor: "sup-test"})
	var out []runtime.ContainerState
	for _, s := range states {
		if s.Running {
			out = append(out, s)
		}
	}
	return out
}

func idle(c *v1alpha1.Conversation) bool {
	return c.Status.State == v1alpha1.ConversationActive && c.Status.Execution == v1alpha1.ExecutionStatus(ptyapi.StatusIdle) &&
		c.Status.ObservedGeneration == c.Generation
}

func condReason(c *v1alpha1.Conversation, typ string) string {
	if cond := meta.FindStatusCondition(c.Status.Conditions, typ); cond != nil {
		return cond.Reason
	}
	return ""
}

const fakeAgentJSON = `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake","env":[{"name":"AICLI_FAKE_DELAY","value":"10ms"}]}}`

func convJSON(name, agent string) string {
	return fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Conversation","metadata":{"name":%q},"spec":{"agentRef":%q}}`, name, agent)
}

func TestConversationLaunchPauseResumeArchive(t *testing.T) {
	e := startConversations(t)
	e.create("agents", fakeAgentJSON)
	e.create("conversations", convJSON("c", "a"))
	c := e.waitConv("IDLE", "c", idle)
	if c.Status.Session == nil || c.Status.Session.SessionID == "" || c.Status.ContainerID == "" || c.Status.GuestFingerprint == "" {
		t.Fatalf("catalog entry incomplete: %+v", c.Status)
	}
	spec, err := e.rt.Spec(c.Status.ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Network != runtime.NetworkNone || spec.Labels[LabelConversationUID] != string(c.UID) || spec.Labels[runtime.LabelAgent] != "a" {
		t.Fatalf("container spec: network %q labels %v", spec.Network, spec.Labels)
	}
	for _, kv := range spec.Env {
		if strings.HasPrefix(kv, scwire.EnvLaunchToken+"=") && len(kv) < len(scwire.EnvLaunchToken)+20 {
			t.Fatalf("launch token missing: %q", kv)
		}
	}
	session := c.Status.Session.SessionID

	e.setDesired("c", v1alpha1.ConversationPaused)
	c = e.waitConv("Paused", "c", func(c *v1alpha1.Conversation) bool { return c.Status.State == v1alpha1.ConversationPaused })
	if len(e.running()) != 0 || c.Status.ContainerID != "" || c.Status.PausedAt == nil {
		t.Fatalf("pause left a container or no pausedAt: %v %+v", e.running(), c.Status)
	}
	if c.Status.Session == nil || c.Status.Session.SessionID != session {
		t.Fatalf("pause lost the session reference: %+v", c.Status.Session)
	}

	e.setDesired("c", v1alpha1.ConversationActive)
	c = e.waitConv("IDLE after resume", "c", idle)
	if c.Status.Session.SessionID != session {
		t.Fatalf("resume did not continue session %s: %+v", session, c.Status.Session)
	}

	e.setDesired("c", v1alpha1.ConversationArchived)
	e.waitConv("Archived", "c", func(c *v1alpha1.Conversation) bool { return c.Status.State == v1alpha1.ConversationArchived })
	if len(e.running()) != 0 {
		t.Fatal("archive left a container running")
	}
}

func TestConversationNamingAMissingAgentGetsACondition(t *testing.T) {
	e := startConversations(t)
	e.create("conversations", convJSON("lost", "ghost"))
	c := e.waitConv("AgentNotFound", "lost", func(c *v1alpha1.Conversation) bool {
		return condReason(c, v1alpha1.ConditionReferencesResolved) == v1alpha1.ReasonAgentNotFound &&
			condReason(c, v1alpha1.ConditionReady) == v1alpha1.ReasonAgentNotFound
	})
	if len(e.rt.Specs()) != 0 || c.Status.State == v1alpha1.ConversationActive {
		t.Fatalf("a conversation without an agent launched something: %v %+v", e.rt.Specs(), c.Status)
	}
}

func TestContainerDeathIsAnUnplannedPauseAndResumable(t *testing.T) {
	e := startConversations(t)
	e.create("agents", fakeAgentJSON)
	e.create("conversations", convJSON("c", "a"))
	c := e.waitConv("IDLE", "c", idle)
	if err := e.rt.Crash(c.Status.ContainerID, 137); err != nil {
		t.Fatal(err)
	}
	c = e.waitConv("unplanned pause", "c", func(c *v1alpha1.Conversation) bool {
		return c.Status.State == v1alpha1.ConversationPaused && c.Spec.DesiredState == v1alpha1.ConversationPaused &&
			condReason(c, v1alpha1.ConditionContainerRunning) == v1alpha1.ReasonUnplannedPause
	})
	if r := condReason(c, v1alpha1.ConditionResumable); r != v1alpha1.ReasonSucceeded {
		t.Fatalf("crashed conversation not resumable: %s", r)
	}
	e.setDesired("c", v1alpha1.ConversationActive)
	e.waitConv("IDLE after resuming a crash", "c", idle)
}

func TestResumeWithDeletedHomeStartsFreshAndSaysSo(t *testing.T) {
	e := startConversations(t)
	e.create("agents", fakeAgentJSON)
	e.create("conversations", convJSON("c", "a"))
	c := e.waitConv("IDLE", "c", idle)
	old := c.Status.Session.SessionID
	e.setDesired("c", v1alpha1.ConversationPaused)
	e.waitConv("Paused", "c", func(c *v1alpha1.Conversation) bool { return c.Status.State == v1alpha1.ConversationPaused })
	if err := os.RemoveAll(e.dir.AgentHome("default", "a")); err != nil {
		t.Fatal(err)
	}
	e.setDesired("c", v1alpha1.ConversationActive)
	c = e.waitConv("fresh start", "c", func(c *v1alpha1.Conversation) bool {
		return idle(c) && c.Status.Session != nil && c.Status.Session.SessionID != old
	})
	cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionResumable)
	if cond == nil || cond.Reason != v1alpha1.ReasonHomeMissing || !strings.Contains(cond.Message, old) {
		t.Fatalf("home loss not reported honestly: %+v", cond)
	}
}

func TestDeletingAnAgentPausesItsLiveConversationFirst(t *testing.T) {
	e := startConversations(t)
	e.create("agents", fakeAgentJSON)
	e.create("conversations", convJSON("c", "a"))
	e.waitConv("IDLE", "c", idle)
	if _, err := e.store.Delete(context.Background(), "agents", "default", "a", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("agent gone", func() bool { return e.agent("a") == nil })
	c := e.conversation("c")
	if c.Spec.DesiredState != v1alpha1.ConversationPaused || c.Status.State != v1alpha1.ConversationPaused || len(e.running()) != 0 {
		t.Fatalf("agent deleted before its conversation was paused: %+v / running %v", c, e.running())
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady); cond == nil || cond.Status == metav1.ConditionTrue && c.Status.State == v1alpha1.ConversationActive {
		t.Fatalf("conditions: %+v", c.Status.Conditions)
	}
}

func TestEgressPolicyFollowsTheRunAndDenialsAreRecorded(t *testing.T) {
	e := startConversations(t)
	e.create("agents", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake","provider":{"endpoint":"http://127.0.0.1:9"},"egress":{"allow":["api.example.com"]}}}`)
	e.create("conversations", convJSON("c", "a"))
	c := e.waitConv("IDLE", "c", idle)
	uid := string(c.UID)
	pol, ok := e.egress.get(uid)
	if !ok {
		t.Fatal("no egress policy installed for the live conversation")
	}
	if _, _, err := pol.CheckTarget("api.example.com:443"); err != nil {
		t.Errorf("allow-listed target refused: %v", err)
	}
	if _, _, err := pol.CheckTarget("evil.example.net:443"); err == nil {
		t.Error("a target off the allow-list is allowed")
	}
	e.sessions.RecordDenial(uid, "evil.example.net:443", "not_allowed: not on the agent's egress allow-list")
	c = e.waitConv("denial recorded", "c", func(c *v1alpha1.Conversation) bool { return len(c.Status.EgressDenials) == 1 })
	if d := c.Status.EgressDenials[0]; d.Target != "evil.example.net:443" || !strings.Contains(d.Reason, "not_allowed") {
		t.Fatalf("denial: %+v", d)
	}
	hist, err := e.store.History(context.Background(), "conversations", "default", "c")
	if err != nil {
		t.Fatal(err)
	}
	last := hist[len(hist)-1].Object
	if ds, _, _ := unstructured.NestedSlice(last.Object, "status", "egressDenials"); len(ds) != 1 {
		t.Fatalf("the denial is not an event in the conversation's history: %v", last.Object["status"])
	}
	e.setDesired("c", v1alpha1.ConversationPaused)
	e.waitConv("Paused", "c", func(c *v1alpha1.Conversation) bool { return c.Status.State == v1alpha1.ConversationPaused })
	if _, ok := e.egress.get(uid); ok {
		t.Fatal("a paused conversation keeps its egress policy")
	}
}
