package controllers

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/egress"
	"aicli.dev/aicli/internal/gateway"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/runtime/fake"
	"aicli.dev/aicli/internal/secrets"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/storeclient"
)

// The tests below drive one ConversationReconciler.Reconcile at a time
// against a real store, the fake runtime, a scripted guest registry and
// scripted images, secrets and PTY: one table per phase.

// scriptedPTY is a guest's PTY whose status and Start outcome the test sets.
type scriptedPTY struct {
	ptyapi.PTY // calls a test does not script panic
	mu         sync.Mutex
	status     ptyapi.StatusInfo
	startErr   error
	startResp  ptyapi.StartResponse
	starts     []ptyapi.StartRequest
}

func (p *scriptedPTY) Status(context.Context) (ptyapi.StatusInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status, nil
}

func (p *scriptedPTY) Start(_ context.Context, req ptyapi.StartRequest) (ptyapi.StartResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts = append(p.starts, req)
	return p.startResp, p.startErr
}

func (p *scriptedPTY) Stop(context.Context) error { return nil }

// scriptedGuests is the live-guest registry with at most one guest.
type scriptedGuests struct {
	pty *scriptedPTY
	// holder, when set, is the PTY handed out instead (one that also holds capabilities).
	holder    ptyapi.PTY
	connected bool
	started   time.Time
	prepared  []string
	forgotten []string
	prepErr   error
}

func (g *scriptedGuests) Prepare(_ context.Context, _ types.NamespacedName, uid string) (*gateway.Launch, error) {
	if g.prepErr != nil {
		return nil, g.prepErr
	}
	g.prepared = append(g.prepared, uid)
	return &gateway.Launch{HostDir: "/tmp/x", ContainerDir: "/run/aicli", Env: map[string]string{"K": "V"}}, nil
}
func (g *scriptedGuests) Adopt(context.Context, types.NamespacedName, string) error { return nil }
func (g *scriptedGuests) Guest(types.NamespacedName, string) (ptyapi.PTY, string, bool) {
	if !g.connected {
		return nil, "", false
	}
	return g.live(), "sha256:guest", true
}

func (g *scriptedGuests) live() ptyapi.PTY {
	if g.holder != nil {
		return g.holder
	}
	return g.pty
}
func (g *scriptedGuests) StartedAt() time.Time { return g.started }
func (g *scriptedGuests) Status(string) (ptyapi.StatusInfo, bool) {
	return ptyapi.StatusInfo{}, false // always read from the PTY
}
func (g *scriptedGuests) Record(types.NamespacedName, string, ptyapi.StatusInfo) {}
func (g *scriptedGuests) PTY(string) (ptyapi.PTY, bool) {
	if !g.connected {
		return nil, false
	}
	return g.live(), true
}
func (g *scriptedGuests) Forget(uid string) error {
	g.forgotten = append(g.forgotten, uid)
	return nil
}
func (g *scriptedGuests) TakeDenials(string) []v1alpha1.EgressDenial { return nil }

// scriptedImages answers Ensure with ref or err; block holds it while building.
type scriptedImages struct {
	ref   string
	err   error
	block chan struct{}
}

func (s scriptedImages) Ensure(ctx context.Context, _ string, progress func(string)) (string, error) {
	if s.block != nil {
		progress("step 3/7")
		select {
		case <-s.block:
		case <-ctx.Done():
		}
	}
	return s.ref, s.err
}

// mapSecrets is a secret store in memory; err, when set, is returned for every read.
type mapSecrets struct {
	values map[string]string
	err    error
}

func (m mapSecrets) Get(namespace, name string) ([]byte, error) {
	if m.err != nil {
		return nil, m.err
	}
	v, ok := m.values[namespace+"/"+name]
	if !ok {
		return nil, secrets.ErrNotFound
	}
	return []byte(v), nil
}

type phaseEnv struct {
	t       *testing.T
	h       *harness
	r       *ConversationReconciler
	rt      *fake.Runtime
	guests  *scriptedGuests
	egress  *policyRecorder
	clock   time.Time
	imgStop chan struct{}
}

// newPhaseEnv builds a reconciler whose image is ready (unless images says
// otherwise), with a connected guest showing an IDLE CLI.
func newPhaseEnv(t *testing.T, images ImageEnsurer) *phaseEnv {
	t.Helper()
	dir := layout.Dir(t.TempDir())
	st, err := store.Open(dir.Store(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); st.Close() })
	if images == nil {
		images = scriptedImages{ref: "img:test"}
	}
	e := &phaseEnv{
		t:      t,
		h:      &harness{t: t, store: st, client: storeclient.New(st), dir: dir},
		rt:     fake.New(),
		egress: &policyRecorder{policies: map[string]egress.Policy{}},
		guests: &scriptedGuests{connected: true, pty: &scriptedPTY{status: ptyapi.StatusInfo{
			Harness: "fake", Alive: true, Status: ptyapi.StatusIdle, SessionID: "s-1"}}},
		clock: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC),
	}
	e.guests.started = e.clock.Add(-time.Hour)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.r = &ConversationReconciler{
		Client: e.h.client, Runtime: e.rt, Guests: e.guests, Egress: e.egress,
		Images:  &ImageCache{Ensurer: images, Ctx: ctx, Logger: log},
		Secrets: mapSecrets{values: map[string]string{"default/key": "sk-test-key"}},
		DataDir: dir, SupervisorID: "sup-test", Logger: log,
		Now: func() time.Time { return e.clock },
	}
	return e
}

func (e *phaseEnv) reconcile() (reconcile.Result, error) {
	return e.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "c"}})
}

// settle reconciles until the image cache has an answer (its build runs in
// the background) and returns the last result.
func (e *phaseEnv) settle() (reconcile.Result, error) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := e.reconcile()
		c := meta.FindStatusCondition(e.conv().Status.Conditions, v1alpha1.ConditionImageReady)
		if c == nil || c.Reason != v1alpha1.ReasonBuilding || time.Now().After(deadline) {
			return res, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *phaseEnv) conv() *v1alpha1.Conversation {
	c := &v1alpha1.Conversation{}
	if err := e.h.client.Get(context.Background(), "default", "c", c); err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *phaseEnv) cond(typ string) *metav1.Condition {
	return meta.FindStatusCondition(e.conv().Status.Conditions, typ)
}

// want checks a condition's status and reason and that its message contains msg.
func (e *phaseEnv) want(typ string, status metav1.ConditionStatus, reason, msg string) {
	e.t.Helper()
	c := e.cond(typ)
	if c == nil {
		if status == "" {
			return
		}
		e.t.Fatalf("%s: missing; conditions: %+v", typ, e.conv().Status.Conditions)
	}
	if c.Status != status || c.Reason != reason || !strings.Contains(c.Message, msg) {
		e.t.Fatalf("%s = %s/%s %q, want %s/%s containing %q", typ, c.Status, c.Reason, c.Message, status, reason, msg)
	}
}

func (e *phaseEnv) running() int {
	states, _ := e.rt.List(context.Background(), map[string]string{runtime.LabelSupervisor: "sup-test"})
	n := 0
	for _, s := range states {
		if s.Running {
			n++
		}
	}
	return n
}

const agentWithSecret = `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake","persona":"You are terse.","provider":{"endpoint":"http://127.0.0.1:9","credential":"Secret","secretName":"key"}}}`

func TestPhaseReferences(t *testing.T) {
	for _, tc := range []struct {
		name, agent, desired string
		wantStatus           metav1.ConditionStatus
		wantReason           string
		wantStalled          bool
	}{
		{name: "agent exists", agent: fakeAgentJSON, desired: "Active", wantStatus: metav1.ConditionTrue, wantReason: v1alpha1.ReasonSucceeded},
		{name: "missing agent stalls an active conversation", desired: "Active", wantStatus: metav1.ConditionFalse,
			wantReason: v1alpha1.ReasonAgentNotFound, wantStalled: true},
		{name: "missing agent of a paused conversation is reported, not stalled", desired: "Paused",
			wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonAgentNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPhaseEnv(t, nil)
			if tc.agent != "" {
				e.h.create("agents", tc.agent)
			}
			e.h.create("conversations", `{"apiVersion":"aicli.dev/v1alpha1","kind":"Conversation","metadata":{"name":"c"},"spec":{"agentRef":"a","desiredState":"`+tc.desired+`"}}`)
			res, err := e.settle()
			if err != nil || (tc.wantStalled && res.RequeueAfter != 0) {
				t.Fatalf("Reconcile = %+v, %v", res, err)
			}
			e.want(v1alpha1.ConditionReferencesResolved, tc.wantStatus, tc.wantReason, "")
			if tc.wantStalled {
				e.want(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonAgentNotFound, "spec.agentRef")
				e.want(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAgentNotFound, "spec.agentRef")
			} else if e.cond(v1alpha1.ConditionStalled) != nil {
				t.Fatalf("Stalled present: %+v", e.cond(v1alpha1.ConditionStalled))
			}
			if tc.wantReason != v1alpha1.ReasonSucceeded && (len(e.rt.Specs()) != 0 || e.conv().Status.State == v1alpha1.ConversationActive) {
				t.Fatalf("a conversation without its agent launched: %v %+v", e.rt.Specs(), e.conv().Status)
			}
		})
	}
}

func TestPhaseAccess(t *testing.T) {
	for _, tc := range []struct {
		name    string
		agent   string
		secrets SecretReader
		// wantErr: a transient failure is returned for backoff.
		wantErr     bool
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMsg     string
		wantStalled bool
	}{
		{name: "credential from a secret", agent: agentWithSecret, wantStatus: metav1.ConditionTrue, wantReason: v1alpha1.ReasonSucceeded,
			wantMsg: `secret "key"`},
		{name: "missing secret stalls before any container", agent: strings.Replace(agentWithSecret, `"secretName":"key"`, `"secretName":"nope"`, 1),
			wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonSecretNotFound, wantMsg: `spec.provider.secretName "nope"`, wantStalled: true},
		{name: "secret credential without a name stalls", agent: strings.Replace(agentWithSecret, `,"secretName":"key"`, ``, 1),
			wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonSecretNotFound, wantMsg: "spec.provider.secretName is empty", wantStalled: true},
		{name: "unreadable secret is retried", agent: agentWithSecret,
			secrets: mapSecrets{err: &fs.PathError{Op: "open", Path: "/data/secrets/default/key", Err: fs.ErrPermission}},
			wantErr: true, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonSecretUnreadable, wantMsg: "permission denied"},
		{name: "invalid egress policy stalls", agent: `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake","provider":{"endpoint":"http://exa mple.com"}}}`,
			wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonEgressInvalid, wantMsg: "spec.egress", wantStalled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPhaseEnv(t, nil)
			if tc.secrets != nil {
				e.r.Secrets = tc.secrets
			}
			e.h.create("agents", tc.agent)
			e.h.create("conversations", convJSON("c", "a"))
			_, err := e.settle()
			if (err != nil) != tc.wantErr {
				t.Fatalf("Reconcile error = %v, want error %v", err, tc.wantErr)
			}
			e.want(v1alpha1.ConditionAccessResolved, tc.wantStatus, tc.wantReason, tc.wantMsg)
			if tc.wantStatus == metav1.ConditionTrue {
				if e.running() != 1 {
					t.Fatalf("running containers = %d, want 1", e.running())
				}
				if _, ok := e.egress.get(string(e.conv().UID)); !ok {
					t.Fatal("no egress policy installed")
				}
				return
			}
			if len(e.rt.Specs()) != 0 {
				t.Fatalf("a container was created although access did not resolve: %v", e.rt.Specs())
			}
			if tc.wantStalled {
				e.want(v1alpha1.ConditionStalled, metav1.ConditionTrue, tc.wantReason, tc.wantMsg)
				e.want(v1alpha1.ConditionReady, metav1.ConditionFalse, tc.wantReason, tc.wantMsg)
			} else {
				e.want(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonSecretUnreadable, "permission denied")
			}
		})
	}
}

func TestStalledAccessStopsALiveRunAndRecoversWhenFixed(t *testing.T) {
	e := newPhaseEnv(t, nil)
	sec := mapSecrets{values: map[string]string{"default/key": "sk-test-key"}}
	e.r.Secrets = sec
	e.h.create("agents", agentWithSecret)
	e.h.create("conversations", convJSON("c", "a"))
	if _, err := e.settle(); err != nil || e.running() != 1 {
		t.Fatalf("first run: %v, running %d", err, e.running())
	}
	delete(sec.values, "default/key")
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	c := e.conv()
	if e.running() != 0 || c.Status.State != v1alpha1.ConversationPaused || c.Spec.DesiredState != v1alpha1.ConversationActive {
		t.Fatalf("stalled run not torn down (desired stays Active): running %d, %+v / %+v", e.running(), c.Spec, c.Status)
	}
	e.want(v1alpha1.ConditionContainerRunning, metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound, "no container")
	sec.values["default/key"] = "sk-test-key"
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	if e.running() != 1 || e.cond(v1alpha1.ConditionStalled) != nil {
		t.Fatalf("fixing the secret did not resume the run: running %d, stalled %+v", e.running(), e.cond(v1alpha1.ConditionStalled))
	}
}

func TestPhaseImage(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	for _, tc := range []struct {
		name       string
		images     ImageEnsurer
		agent      string
		wantReason string
		wantAfter  time.Duration
		wantMsg    string
	}{
		{name: "spec.image wins", images: scriptedImages{err: errors.New("unused")},
			agent:      `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake","image":"mine:1"}}`,
			wantReason: v1alpha1.ReasonSucceeded, wantMsg: "mine:1"},
		{name: "built image", images: scriptedImages{ref: "img:test"}, wantReason: v1alpha1.ReasonSucceeded, wantMsg: "img:test"},
		{name: "building", images: scriptedImages{block: block}, wantReason: v1alpha1.ReasonBuilding, wantMsg: "step 3/7"},
		{name: "failed build retried later", images: scriptedImages{err: errors.New("npm install failed")},
			wantReason: v1alpha1.ReasonBuildFailed, wantAfter: imageRetryAfter, wantMsg: "npm install failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPhaseEnv(t, tc.images)
			agent := tc.agent
			if agent == "" {
				agent = fakeAgentJSON
			}
			e.h.create("agents", agent)
			e.h.create("conversations", convJSON("c", "a"))
			var res reconcile.Result
			var err error
			deadline := time.Now().Add(5 * time.Second)
			for {
				res, err = e.reconcile()
				c := e.cond(v1alpha1.ConditionImageReady)
				if c != nil && c.Reason == tc.wantReason && strings.Contains(c.Message, tc.wantMsg) || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err != nil || res.RequeueAfter != tc.wantAfter {
				t.Fatalf("Reconcile = %+v, %v; want RequeueAfter %s", res, err, tc.wantAfter)
			}
			if tc.wantReason == v1alpha1.ReasonSucceeded {
				e.want(v1alpha1.ConditionImageReady, metav1.ConditionTrue, tc.wantReason, tc.wantMsg)
				return
			}
			e.want(v1alpha1.ConditionImageReady, metav1.ConditionFalse, tc.wantReason, tc.wantMsg)
			e.want(v1alpha1.ConditionReconciling, metav1.ConditionTrue, tc.wantReason, tc.wantMsg)
			if len(e.rt.Specs()) != 0 {
				t.Fatal("a container was created without an image")
			}
		})
	}
}

func TestPhaseContainer(t *testing.T) {
	for _, tc := range []struct {
		name string
		// prepare runs after the first successful reconcile when live is set.
		live    bool
		prepare func(e *phaseEnv)
		fail    fake.Op
		// wantErr: the reconcile returns an error (and still writes status).
		wantErr     bool
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMsg     string
		wantDesired v1alpha1.ConversationState
	}{
		{name: "launch", wantStatus: metav1.ConditionTrue, wantReason: v1alpha1.ReasonSucceeded, wantMsg: "is running",
			wantDesired: v1alpha1.ConversationActive},
		{name: "create fails", fail: fake.OpCreate, wantErr: true, wantStatus: metav1.ConditionFalse,
			wantReason: v1alpha1.ReasonLaunchFailed, wantMsg: "creating the container: fake runtime create: engine says no", wantDesired: v1alpha1.ConversationActive},
		{name: "start fails", fail: fake.OpStart, wantErr: true, wantStatus: metav1.ConditionFalse,
			wantReason: v1alpha1.ReasonLaunchFailed, wantMsg: "starting the container: fake runtime start: engine says no", wantDesired: v1alpha1.ConversationActive},
		{name: "side channel fails", prepare: func(e *phaseEnv) { e.guests.prepErr = errors.New("socket dir full") }, wantErr: true,
			wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonLaunchFailed, wantMsg: "socket dir full", wantDesired: v1alpha1.ConversationActive},
		{name: "container died", live: true, prepare: func(e *phaseEnv) { _ = e.rt.Crash(e.conv().Status.ContainerID, 137) },
			wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonUnplannedPause, wantMsg: "exited with code 137",
			wantDesired: v1alpha1.ConversationPaused},
		{name: "container vanished", live: true, prepare: func(e *phaseEnv) {
			id := e.conv().Status.ContainerID
			_ = e.rt.Stop(context.Background(), id, 0)
			_ = e.rt.Remove(context.Background(), id)
		}, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonUnplannedPause, wantMsg: "is gone", wantDesired: v1alpha1.ConversationPaused},
		{name: "listing fails", live: true, fail: fake.OpList, wantErr: true, wantStatus: metav1.ConditionTrue,
			wantReason: v1alpha1.ReasonSucceeded, wantDesired: v1alpha1.ConversationActive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPhaseEnv(t, nil)
			e.h.create("agents", fakeAgentJSON)
			e.h.create("conversations", convJSON("c", "a"))
			if tc.live {
				if _, err := e.settle(); err != nil || e.running() != 1 {
					t.Fatalf("first run: %v, running %d", err, e.running())
				}
			}
			if tc.prepare != nil {
				tc.prepare(e)
			}
			if tc.fail != "" {
				e.rt.FailNext(tc.fail, errors.New("engine says no"))
			}
			_, err := e.settle()
			if (err != nil) != tc.wantErr {
				t.Fatalf("Reconcile error = %v, want error %v", err, tc.wantErr)
			}
			e.want(v1alpha1.ConditionContainerRunning, tc.wantStatus, tc.wantReason, tc.wantMsg)
			c := e.conv()
			if c.Spec.DesiredState != tc.wantDesired {
				t.Fatalf("desired state %s, want %s", c.Spec.DesiredState, tc.wantDesired)
			}
			switch {
			case tc.wantReason == v1alpha1.ReasonUnplannedPause:
				if e.running() != 0 || c.Status.State != v1alpha1.ConversationPaused || c.Status.PausedAt == nil {
					t.Fatalf("crash not torn down into a pause: running %d, %+v", e.running(), c.Status)
				}
				e.want(v1alpha1.ConditionResumable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "s-1")
			case tc.wantErr && tc.wantReason == v1alpha1.ReasonLaunchFailed:
				e.want(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonLaunchFailed, tc.wantMsg)
				e.want(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonLaunchFailed, tc.wantMsg)
				if e.running() != 0 {
					t.Fatalf("a failed launch left %d containers running", e.running())
				}
				e.guests.prepErr = nil
				if _, err := e.settle(); err != nil || e.running() != 1 {
					t.Fatalf("the retry did not launch: %v, running %d", err, e.running())
				}
			case tc.wantErr:
				e.want(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonRetrying, "engine says no")
			}
		})
	}
}

func TestPhaseGuest(t *testing.T) {
	for _, tc := range []struct {
		name        string
		connected   bool
		elapsed     time.Duration
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantAfter   time.Duration
		wantDesired v1alpha1.ConversationState
	}{
		{name: "connected", connected: true, wantStatus: metav1.ConditionTrue, wantReason: v1alpha1.ReasonSucceeded,
			wantDesired: v1alpha1.ConversationActive},
		{name: "waiting for the dial", elapsed: 5 * time.Second, wantStatus: metav1.ConditionFalse,
			wantReason: v1alpha1.ReasonWaitingForGuest, wantAfter: GuestDialTimeout - 5*time.Second, wantDesired: v1alpha1.ConversationActive},
		{name: "never dialled", elapsed: GuestDialTimeout + time.Second, wantStatus: metav1.ConditionFalse,
			wantReason: v1alpha1.ReasonPaused, wantDesired: v1alpha1.ConversationPaused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPhaseEnv(t, nil)
			e.guests.connected = tc.connected
			e.h.create("agents", fakeAgentJSON)
			e.h.create("conversations", convJSON("c", "a"))
			if _, err := e.settle(); err != nil {
				t.Fatal(err)
			}
			e.clock = e.clock.Add(tc.elapsed)
			res, err := e.reconcile()
			if err != nil || res.RequeueAfter != tc.wantAfter {
				t.Fatalf("Reconcile = %+v, %v; want RequeueAfter %s", res, err, tc.wantAfter)
			}
			e.want(v1alpha1.ConditionGuestConnected, tc.wantStatus, tc.wantReason, "")
			c := e.conv()
			if c.Spec.DesiredState != tc.wantDesired {
				t.Fatalf("desired %s, want %s", c.Spec.DesiredState, tc.wantDesired)
			}
			switch tc.wantReason {
			case v1alpha1.ReasonSucceeded:
				if c.Status.GuestFingerprint != "sha256:guest" {
					t.Fatalf("fingerprint %q", c.Status.GuestFingerprint)
				}
			case v1alpha1.ReasonWaitingForGuest:
				e.want(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonWaitingForGuest, "")
			case v1alpha1.ReasonPaused:
				e.want(v1alpha1.ConditionContainerRunning, metav1.ConditionFalse, v1alpha1.ReasonUnplannedPause, "did not connect within")
				if e.running() != 0 {
					t.Fatal("a guest that never dialled left its container running")
				}
			}
		})
	}
}

func TestPhaseCLI(t *testing.T) {
	exit3 := 3
	for _, tc := range []struct {
		name       string
		status     ptyapi.StatusInfo
		startErr   error
		session    string // a session in the catalog to resume
		wantErr    bool
		wantStatus metav1.ConditionStatus
		wantReason string
		wantStart  bool
	}{
		{name: "starts the CLI with the bundle", status: ptyapi.StatusInfo{}, wantStatus: metav1.ConditionFalse,
			wantReason: v1alpha1.ReasonStarting, wantStart: true},
		{name: "resumes the recorded session", status: ptyapi.StatusInfo{}, session: "s-old", wantStatus: metav1.ConditionFalse,
			wantReason: v1alpha1.ReasonStarting, wantStart: true},
		{name: "start fails", status: ptyapi.StatusInfo{}, startErr: ptyapi.ErrUnknownHarness, wantErr: true,
			wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonLaunchFailed, wantStart: true},
		{name: "still starting", status: ptyapi.StatusInfo{Harness: "fake", Alive: true, Status: ptyapi.StatusStarting},
			wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonStarting},
		{name: "idle", status: ptyapi.StatusInfo{Harness: "fake", Alive: true, Status: ptyapi.StatusIdle, SessionID: "s-1"},
			wantStatus: metav1.ConditionTrue, wantReason: v1alpha1.ReasonSucceeded},
		{name: "exited", status: ptyapi.StatusInfo{Harness: "fake", Status: ptyapi.StatusExited, ExitCode: &exit3},
			wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonPaused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPhaseEnv(t, nil)
			e.guests.pty.status, e.guests.pty.startErr = tc.status, tc.startErr
			e.guests.pty.startResp = ptyapi.StartResponse{SessionID: "s-new"}
			e.h.create("agents", agentWithSecret)
			e.h.create("conversations", convJSON("c", "a"))
			if tc.session != "" {
				_ = ensureOwnedDir(e.h.dir.AgentHome("default", "a"))
				c := e.conv()
				c.Status.Session = &v1alpha1.SessionRef{Harness: "fake", SessionID: tc.session}
				if err := e.h.client.UpdateStatus(context.Background(), c); err != nil {
					t.Fatal(err)
				}
			}
			_, err := e.settle()
			if (err != nil) != tc.wantErr {
				t.Fatalf("Reconcile error = %v, want error %v", err, tc.wantErr)
			}
			e.want(v1alpha1.ConditionCLIReady, tc.wantStatus, tc.wantReason, "")
			starts := e.guests.pty.starts
			if tc.wantStart != (len(starts) == 1) {
				t.Fatalf("Start calls: %+v", starts)
			}
			c := e.conv()
			if tc.wantStart {
				req := starts[0]
				if req.Instructions != "You are terse." || req.Provider == nil || req.Provider.APIKey != "sk-test-key" || req.Harness != "fake" {
					t.Fatalf("start request lacks the bundle: %+v", req)
				}
				if tc.session != "" && (req.ResumeSession != tc.session || req.SessionID != "") {
					t.Fatalf("resume request: %+v", req)
				}
				if tc.session == "" && (req.ResumeSession != "" || req.SessionID == "") {
					t.Fatalf("fresh start request: %+v", req)
				}
			}
			switch tc.wantReason {
			case v1alpha1.ReasonStarting:
				e.want(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonStarting, "")
			case v1alpha1.ReasonSucceeded:
				if c.Status.Execution != "IDLE" || c.Status.Session == nil || c.Status.Session.SessionID != "s-1" {
					t.Fatalf("status: %+v", c.Status)
				}
				e.want(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
				if e.cond(v1alpha1.ConditionReconciling) != nil || e.cond(v1alpha1.ConditionStalled) != nil {
					t.Fatalf("Reconciling/Stalled present while Ready: %+v", c.Status.Conditions)
				}
			case v1alpha1.ReasonPaused:
				e.want(v1alpha1.ConditionContainerRunning, metav1.ConditionFalse, v1alpha1.ReasonUnplannedPause, "exited with code 3")
				if c.Spec.DesiredState != v1alpha1.ConversationPaused {
					t.Fatalf("desired %s", c.Spec.DesiredState)
				}
			case v1alpha1.ReasonLaunchFailed:
				e.want(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonLaunchFailed, "unknown harness")
			}
		})
	}
}

func TestPhaseResumable(t *testing.T) {
	for _, tc := range []struct {
		name       string
		resp       ptyapi.StartResponse
		deleteHome bool
		wantReason string
		wantMsg    string
	}{
		{name: "session recorded", resp: ptyapi.StartResponse{SessionID: "s-new"}, wantReason: v1alpha1.ReasonSucceeded, wantMsg: "s-new"},
		{name: "no session yet", wantReason: v1alpha1.ReasonNoSession},
		{name: "resume unsupported", resp: ptyapi.StartResponse{ResumeUnsupported: true, SessionID: "s-new"},
			wantReason: v1alpha1.ReasonResumeUnsupported, wantMsg: "cannot resume session s-old"},
		{name: "home deleted", resp: ptyapi.StartResponse{SessionID: "s-new"}, deleteHome: true,
			wantReason: v1alpha1.ReasonHomeMissing, wantMsg: "session s-old cannot be resumed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPhaseEnv(t, nil)
			e.guests.pty.status = ptyapi.StatusInfo{}
			e.guests.pty.startResp = tc.resp
			e.h.create("agents", fakeAgentJSON)
			e.h.create("conversations", convJSON("c", "a"))
			if tc.name != "no session yet" {
				c := e.conv()
				c.Status.Session = &v1alpha1.SessionRef{Harness: "fake", SessionID: "s-old"}
				if err := e.h.client.UpdateStatus(context.Background(), c); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.deleteHome {
				_ = ensureOwnedDir(e.h.dir.AgentHome("default", "a"))
			}
			if _, err := e.settle(); err != nil {
				t.Fatal(err)
			}
			status := metav1.ConditionFalse
			if tc.wantReason == v1alpha1.ReasonSucceeded {
				status = metav1.ConditionTrue
			}
			e.want(v1alpha1.ConditionResumable, status, tc.wantReason, tc.wantMsg)
			if tc.wantReason != v1alpha1.ReasonResumeUnsupported && tc.wantReason != v1alpha1.ReasonHomeMissing {
				return
			}
			// The launch report survives later reconciles of the same generation.
			e.guests.pty.status = ptyapi.StatusInfo{Harness: "fake", Alive: true, Status: ptyapi.StatusIdle, SessionID: "s-new"}
			if _, err := e.reconcile(); err != nil {
				t.Fatal(err)
			}
			e.want(v1alpha1.ConditionResumable, status, tc.wantReason, tc.wantMsg)
		})
	}
}

func TestSkippedPhasesDoNotClaimReadiness(t *testing.T) {
	e := newPhaseEnv(t, nil)
	e.h.create("agents", fakeAgentJSON)
	e.h.create("conversations", convJSON("c", "a"))
	if _, err := e.settle(); err != nil {
		t.Fatal(err)
	}
	e.want(v1alpha1.ConditionCLIReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "IDLE")
	e.guests.connected = false // the guest's connection dropped
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	e.want(v1alpha1.ConditionGuestConnected, metav1.ConditionFalse, v1alpha1.ReasonWaitingForGuest, "")
	e.want(v1alpha1.ConditionCLIReady, metav1.ConditionUnknown, v1alpha1.ReasonDependencyNotReady, "waiting for GuestConnected")
	e.want(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonWaitingForGuest, "")
}
