package authority

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/toolwire"
	"aicli.dev/aicli/internal/capability"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/secrets"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/tools"
)

// memHolder is a guest's memory: the last pushed capability set.
type memHolder struct {
	mu     sync.Mutex
	caps   ptyapi.Capabilities
	pushes int
}

func (h *memHolder) SetCapabilities(_ context.Context, c ptyapi.Capabilities) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.caps, h.pushes = c, h.pushes+1
	return nil
}

func (h *memHolder) token(tool string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.caps.Tools {
		if t.Name == tool {
			return t.Token
		}
	}
	return ""
}

type env struct {
	t      *testing.T
	st     *store.Store
	client *storeclient.Client
	keys   *capability.Keyring
	leases *Manager
	auth   *Authorizer
	clock  time.Time
	mu     sync.Mutex
}

func (e *env) now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.clock
}

func (e *env) advance(d time.Duration) {
	e.mu.Lock()
	e.clock = e.clock.Add(d)
	e.mu.Unlock()
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	keys, err := capability.OpenKeyring(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sec := secrets.Store{Dir: t.TempDir()}
	if err := sec.Set("default", "greet-key", []byte("s3cr3t-value")); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, st: st, client: storeclient.New(st), keys: keys, clock: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)}
	e.leases = &Manager{Keys: keys, TTL: time.Minute, Now: e.now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	t.Cleanup(e.leases.Close)
	e.auth = &Authorizer{Leases: e.leases, Keys: keys, Client: e.client, Secrets: sec, Quota: capability.NewQuota(), Now: e.now}
	for _, a := range []string{"alice", "bob", "carol"} {
		ag := &v1alpha1.Agent{Spec: v1alpha1.AgentSpec{Harness: "fake"}}
		ag.Namespace, ag.Name = "default", a
		if a == "alice" {
			ag.Spec.Peers = &v1alpha1.PeerPolicy{SendTo: &v1alpha1.PeerSet{Agents: []string{"bob"}}}
		}
		if err := e.client.Create(context.Background(), ag); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) grant(name, subject string, att *v1alpha1.Attenuation) *v1alpha1.Grant {
	e.t.Helper()
	e.class()
	g := &v1alpha1.Grant{Spec: v1alpha1.GrantSpec{Subject: subject, Tools: []v1alpha1.ToolGrant{{
		Name: "greet", Usage: "greet NAME", ClassName: "greet", Attenuation: att,
	}}}}
	g.Namespace, g.Name = "default", name
	if err := e.client.Create(context.Background(), g); err != nil {
		e.t.Fatal(err)
	}
	return g
}

// class stores the ToolClass "greet" (once): /bin/echo with the secret greet-key.
func (e *env) class() {
	e.t.Helper()
	c := &v1alpha1.ToolClass{Spec: v1alpha1.ToolClassSpec{
		Backend:    v1alpha1.ToolBackend{Exec: &v1alpha1.ExecBackend{Command: "/bin/echo"}},
		SecretRefs: []v1alpha1.SecretRef{{Name: "greet-key", Env: "GREET_KEY"}},
	}}
	c.Name = "greet"
	if err := e.client.Create(context.Background(), c); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
}

// classes indexes the stored ToolClasses.
func (e *env) classes() map[string]*v1alpha1.ToolClass {
	e.t.Helper()
	var list v1alpha1.ToolClassList
	if err := e.client.List(context.Background(), "", &list, nil); err != nil {
		e.t.Fatal(err)
	}
	return grants.ClassIndex(list.Items)
}

// hold makes conversation uid of agent hold its effective tools, as the lease phase does.
func (e *env) hold(agent, conv, uid, fp string) *memHolder {
	e.t.Helper()
	var list v1alpha1.GrantList
	if err := e.client.List(context.Background(), "default", &list, nil); err != nil {
		e.t.Fatal(err)
	}
	ts, _, _ := grants.Effective(list.Items, e.classes(), agent)
	h := &memHolder{}
	if err := e.leases.Hold(context.Background(), Lease{Namespace: "default", Agent: agent, Conversation: conv, UID: uid,
		Fingerprint: fp, Tools: ts, Holder: h}); err != nil {
		e.t.Fatal(err)
	}
	return h
}

func (e *env) call(uid, fp, token string, args ...string) (*tools.Authorization, error) {
	return e.auth.Authorize(context.Background(), tools.Caller{ConversationUID: uid, GuestFingerprint: fp},
		toolwire.Request{Op: toolwire.OpCall, Tool: "greet", Args: args, Token: token})
}

func refusedFor(t *testing.T, err error, reason string) {
	t.Helper()
	var r *tools.Refusal
	if !errors.As(err, &r) || r.Reason != reason {
		t.Fatalf("err %v, want a refusal %q", err, reason)
	}
}

func TestAuthorizeResolvesSecretsHostSide(t *testing.T) {
	e := newEnv(t)
	e.grant("g", "alice", nil)
	h := e.hold("alice", "c1", "uid-1", "fp-1")
	a, err := e.call("uid-1", "fp-1", h.token("greet"), "world")
	if err != nil {
		t.Fatal(err)
	}
	if string(a.Secrets["greet-key"]) != "s3cr3t-value" || a.Grant != "g" || a.Conversation != "c1" || a.Tool.Name != "greet" {
		t.Fatalf("authorization %+v", a)
	}
}

func TestReplayFromAnotherConversationOrKeyIsRefused(t *testing.T) {
	e := newEnv(t)
	e.grant("g", "alice", nil)
	e.grant("g-bob", "bob", nil)
	alice := e.hold("alice", "c1", "uid-1", "fp-1")
	e.hold("bob", "c2", "uid-2", "fp-2")
	tok := alice.token("greet")
	_, err := e.call("uid-2", "fp-2", tok) // alice's token on bob's connection
	refusedFor(t, err, string(capability.ReasonWrongConversation))
	_, err = e.call("uid-1", "fp-other", tok) // alice's conversation, another guest key
	refusedFor(t, err, string(capability.ReasonWrongHolder))
	_, err = e.call("uid-9", "fp-1", tok) // a conversation without a lease
	refusedFor(t, err, ReasonNoLease)
	_, err = e.call("uid-1", "fp-1", tok[:len(tok)/2]) // garbage
	refusedFor(t, err, string(capability.ReasonMalformed))
}

func TestExpiredLeaseIsRefusedWithinOneTTL(t *testing.T) {
	e := newEnv(t)
	e.grant("g", "alice", nil)
	h := e.hold("alice", "c1", "uid-1", "fp-1")
	tok := h.token("greet")
	// The container dies and nothing releases the lease (revocation missed):
	// no renewal reaches the guest; one TTL later the token is dead.
	e.advance(61 * time.Second)
	_, err := e.call("uid-1", "fp-1", tok)
	refusedFor(t, err, ReasonNoLease)
	_, err = e.keys.Verify(tok, capability.Presentation{Namespace: "default", Conversation: "uid-1", Holder: "fp-1", Tool: "greet", Now: e.now()})
	var r *capability.Refusal
	if !errors.As(err, &r) || r.Reason != capability.ReasonExpired {
		t.Fatalf("the token itself after one TTL: %v", err)
	}
}

// dyingHolder is a guest that goes away when dead is set.
type dyingHolder struct {
	memHolder
	dead atomic.Bool
}

func (h *dyingHolder) SetCapabilities(ctx context.Context, c ptyapi.Capabilities) error {
	if h.dead.Load() {
		return errors.New("session shutdown")
	}
	return h.memHolder.SetCapabilities(ctx, c)
}

func TestAnUnreachableGuestsLeaseLapsesWithinOneTTL(t *testing.T) {
	e := newEnv(t)
	e.grant("g", "alice", nil)
	e.leases.TTL = 300 * time.Millisecond
	e.leases.Now = nil
	changed := make(chan string, 4)
	e.leases.Changed = func(ns, grant string) { changed <- ns + "/" + grant }
	var list v1alpha1.GrantList
	if err := e.client.List(context.Background(), "default", &list, nil); err != nil {
		t.Fatal(err)
	}
	ts, _, _ := grants.Effective(list.Items, e.classes(), "alice")
	h := &dyingHolder{}
	if err := e.leases.Hold(context.Background(), Lease{Namespace: "default", Agent: "alice", Conversation: "c1", UID: "uid-1",
		Fingerprint: "fp-1", Tools: ts, Holder: h}); err != nil {
		t.Fatal(err)
	}
	<-changed // taken
	// The guest dies: every renewal fails; nothing calls Release.
	h.dead.Store(true)
	start := time.Now()
	select {
	case got := <-changed:
		if got != "default/g" {
			t.Fatalf("changed %q", got)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the lapse was not reported")
	}
	if d := time.Since(start); d > 2*e.leases.TTL {
		t.Fatalf("lapsed after %v", d)
	}
	if _, ok := e.leases.Lookup("uid-1"); ok || len(e.leases.Held("default", "g")) != 0 {
		t.Fatal("a lapsed lease is still held")
	}
}

func TestReleasedLeaseIsRefusedAtOnce(t *testing.T) {
	e := newEnv(t)
	e.grant("g", "alice", nil)
	h := e.hold("alice", "c1", "uid-1", "fp-1")
	e.leases.Release("uid-1")
	_, err := e.call("uid-1", "fp-1", h.token("greet"))
	refusedFor(t, err, ReasonNoLease)
}

func TestRevokedGrantIsRefusedOnTheNextCall(t *testing.T) {
	e := newEnv(t)
	g := e.grant("g", "alice", nil)
	h := e.hold("alice", "c1", "uid-1", "fp-1")
	tok := h.token("greet")
	g.Spec.Tools[0].Usage = "edited"
	if err := e.client.Update(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	_, err := e.call("uid-1", "fp-1", tok)
	refusedFor(t, err, ReasonRevoked)
	if _, err := e.st.Delete(context.Background(), "grants", "default", g.Name, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = e.call("uid-1", "fp-1", tok)
	refusedFor(t, err, ReasonRevoked)
}

func TestPinsAndAttenuatedTokens(t *testing.T) {
	e := newEnv(t)
	e.grant("g", "alice", &v1alpha1.Attenuation{PinnedParams: map[string]string{"lang": "en"}})
	h := e.hold("alice", "c1", "uid-1", "fp-1")
	a, err := e.call("uid-1", "fp-1", h.token("greet"), "world")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Args; !reflect.DeepEqual(got, []string{"--lang=en", "--", "world"}) {
		t.Fatalf("args %q", got)
	}
	_, err = e.call("uid-1", "fp-1", h.token("greet"), "--lang=fr")
	refusedFor(t, err, string(capability.ReasonParamMismatch))
	// A token the holder attenuated itself cannot be used more widely.
	narrow, err := capability.Attenuate(h.token("greet"), capability.Attenuation{Params: map[string]string{"name": "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.call("uid-1", "fp-1", narrow, "--name=eve")
	refusedFor(t, err, string(capability.ReasonParamMismatch))
	if _, err := e.call("uid-1", "fp-1", narrow, "--name=bob"); err != nil {
		t.Fatal(err)
	}
}

func TestCallsPerHourCapHoldsInATightLoop(t *testing.T) {
	e := newEnv(t)
	e.grant("g", "alice", &v1alpha1.Attenuation{MaxCallsPerHour: 25})
	h := e.hold("alice", "c1", "uid-1", "fp-1")
	ok := 0
	for i := 0; i < 1000; i++ {
		_, err := e.call("uid-1", "fp-1", h.token("greet"))
		if err == nil {
			ok++
		} else {
			refusedFor(t, err, ReasonQuotaExceeded)
		}
	}
	if ok != 25 {
		t.Fatalf("%d calls passed a cap of 25", ok)
	}
	_, err := e.call("uid-1", "fp-1", h.token("greet"))
	var r *tools.Refusal
	if !errors.As(err, &r) || r.Grant != "g" || r.Namespace != "default" || r.Conversation != "c1" {
		t.Fatalf("refusal not attributed to its grant: %+v", r)
	}
}

func TestRenewalKeepsTheLeaseAlive(t *testing.T) {
	e := newEnv(t)
	e.grant("g", "alice", nil)
	e.leases.TTL = 150 * time.Millisecond
	e.leases.Now = nil // real time: the renewer runs on a real ticker
	e.auth.Now = nil
	h := e.hold("alice", "c1", "uid-1", "fp-1")
	time.Sleep(500 * time.Millisecond)
	if _, err := e.call("uid-1", "fp-1", h.token("greet")); err != nil {
		t.Fatalf("after 3 TTLs of renewals: %v", err)
	}
	h.mu.Lock()
	pushes := h.pushes
	h.mu.Unlock()
	if pushes < 3 {
		t.Fatalf("%d pushes in 3 TTLs", pushes)
	}
}

func TestDelegationOnlyNarrows(t *testing.T) {
	e := newEnv(t)
	e.grant("g", "alice", &v1alpha1.Attenuation{MaxCallsPerHour: 10})
	h := e.hold("alice", "c1", "uid-1", "fp-1")
	d := Delegator{Authorizer: e.auth}
	caller := tools.Caller{ConversationUID: "uid-1", GuestFingerprint: "fp-1"}
	msg, err := d.Delegate(context.Background(), caller, h.token("greet"), "greet",
		toolwire.DelegateArgs{Peer: "bob", CallsPerHour: 100, Params: map[string]string{"lang": "en"}})
	if err != nil {
		t.Fatal(err)
	}
	var list v1alpha1.GrantList
	if err := e.client.List(context.Background(), "default", &list, nil); err != nil {
		t.Fatal(err)
	}
	var dg *v1alpha1.Grant
	for i := range list.Items {
		if list.Items[i].Spec.Delegation != nil {
			dg = &list.Items[i]
		}
	}
	if dg == nil || dg.Spec.Subject != "bob" || dg.Spec.Delegation.Parent != "g" {
		t.Fatalf("%s: %+v", msg, list.Items)
	}
	// Asking for 100 calls an hour under a parent of 10 gives 10.
	if a := dg.Spec.Tools[0].Attenuation; a.MaxCallsPerHour != 10 || a.PinnedParams["lang"] != "en" {
		t.Fatalf("delegated attenuation %+v", a)
	}
	if err := grants.DelegationValid(dg, list.Items); err != nil {
		t.Fatal(err)
	}
	// Only to a peer the delegator may message.
	_, err = d.Delegate(context.Background(), caller, h.token("greet"), "greet", toolwire.DelegateArgs{Peer: "carol"})
	refusedFor(t, err, ReasonNotAPeer)
}

// TestDelegatedPinCannotBeWidenedBack: alice delegates greet to bob with repo pinned; whatever bob passes, the call
// is refused (param_mismatch, counted on the delegated grant) or the arguments it authorises, read by Go's flag
// package as a backend would, give the pinned repo.
func TestDelegatedPinCannotBeWidenedBack(t *testing.T) {
	e := newEnv(t)
	e.grant("g", "alice", nil)
	h := e.hold("alice", "c1", "uid-1", "fp-1")
	d := Delegator{Authorizer: e.auth}
	if _, err := d.Delegate(context.Background(), tools.Caller{ConversationUID: "uid-1", GuestFingerprint: "fp-1"},
		h.token("greet"), "greet", toolwire.DelegateArgs{Peer: "bob", Params: map[string]string{"repo": "team/allowed"}}); err != nil {
		t.Fatal(err)
	}
	hb := e.hold("bob", "c2", "uid-2", "fp-2")
	attacks := [][]string{
		{"-repo=evil/other", "-out"},
		{"--rep=evil", "--out"},
		{"--repo", "evil/other"},
		{"---repo=evil/other"},
		{"--repo=evil/other"},
		{"-out", "--repo=team/allowed"},
		{"--out=-repo=evil/other", "x"},
		{"x", "--", "-repo=evil/other"},
		{"—repo=evil/other"},
	}
	for _, args := range attacks {
		a, err := e.call("uid-2", "fp-2", hb.token("greet"), args...)
		var r *tools.Refusal
		if errors.As(err, &r) {
			if r.Reason != ReasonBadParams || r.Grant == "g" || r.Grant == "" {
				t.Errorf("%q: refusal %+v", args, r)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		fs := flag.NewFlagSet("greet", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		repo, _ := fs.String("repo", "", ""), fs.String("out", "", "")
		if err := fs.Parse(append(append([]string(nil), a.Tool.Backend.Exec.Args...), a.Args...)); err != nil || *repo != "team/allowed" {
			t.Errorf("%q: authorised %q, which Go's flag package reads as repo=%q (err %v)", args, a.Args, *repo, err)
		}
	}
}

// Each call is on the grant when Record returns: the tool server records before the caller sees its exit code,
// so a supervisor killed right after cannot lose a call whose result the caller saw.
func TestRecorderWritesEachCallOnTheGrant(t *testing.T) {
	e := newEnv(t)
	e.grant("g", "alice", nil)
	h := e.hold("alice", "c1", "uid-1", "fp-1")
	ctx := context.Background()
	rec := &Recorder{Client: e.client, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for i := 0; i < 3; i++ {
		a, err := e.call("uid-1", "fp-1", h.token("greet"))
		if err != nil {
			t.Fatal(err)
		}
		rec.Record(tools.CallRecord{Auth: a, Tool: "greet", At: e.now(), Duration: 3 * time.Millisecond, ExitCode: i, BytesIn: 5, BytesOut: 7})
		g := &v1alpha1.Grant{}
		if err := e.client.Get(ctx, "default", "g", g); err != nil {
			t.Fatal(err)
		}
		if g.Status.Calls != int64(i+1) {
			t.Fatalf("after Record returned for call %d the grant counts %d calls", i+1, g.Status.Calls)
		}
		if lc := g.Status.LastCall; lc == nil || lc.ExitCode != int32(i) || lc.Conversation != "c1" || lc.BytesOut != 7 {
			t.Fatalf("last call %+v", lc)
		}
	}
}

// Concurrent records of one grant all land (they are serialised, not lost to write conflicts).
func TestRecorderConcurrentCallsOfOneGrant(t *testing.T) {
	e := newEnv(t)
	e.grant("g", "alice", nil)
	h := e.hold("alice", "c1", "uid-1", "fp-1")
	rec := &Recorder{Client: e.client, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	a, err := e.call("uid-1", "fp-1", h.token("greet"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 32
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec.Record(tools.CallRecord{Auth: a, Tool: "greet", At: e.now(), ExitCode: i})
		}()
	}
	wg.Wait()
	g := &v1alpha1.Grant{}
	if err := e.client.Get(context.Background(), "default", "g", g); err != nil {
		t.Fatal(err)
	}
	if g.Status.Calls != n {
		t.Fatalf("%d concurrent calls recorded as %d", n, g.Status.Calls)
	}
}

// TestDelegationIsCapped: an agent may hold at most MaxLive live delegated
// grants and delegate at most PerHour times an hour, and each delegation
// counts as a call of the tool against its cap. Before the cap, a looping
// CLI could create delegated grants without end.
func TestDelegationIsCapped(t *testing.T) {
	e := newEnv(t)
	e.grant("g", "alice", &v1alpha1.Attenuation{MaxCallsPerHour: 1000})
	h := e.hold("alice", "c1", "uid-1", "fp-1")
	caller := tools.Caller{ConversationUID: "uid-1", GuestFingerprint: "fp-1"}
	delegate := func(d Delegator) error {
		_, err := d.Delegate(context.Background(), caller, h.token("greet"), "greet", toolwire.DelegateArgs{Peer: "bob"})
		return err
	}
	live := Delegator{Authorizer: e.auth, MaxLive: 3, PerHour: 100}
	for i := 0; i < 3; i++ {
		if err := delegate(live); err != nil {
			t.Fatalf("delegation %d: %v", i, err)
		}
	}
	err := delegate(live)
	refusedFor(t, err, ReasonDelegationLimit)
	if !strings.Contains(err.Error(), "3 live delegated grants") {
		t.Fatalf("refusal %v does not say the limit", err)
	}

	rate := Delegator{Authorizer: e.auth, MaxLive: 100, PerHour: 4} // 3 this hour already
	if err := delegate(rate); err != nil {
		t.Fatal(err)
	}
	refusedFor(t, delegate(rate), ReasonDelegationLimit)

	// The tool's own cap: a grant of 2 calls an hour allows two delegations.
	e2 := newEnv(t)
	e2.grant("g", "alice", &v1alpha1.Attenuation{MaxCallsPerHour: 2})
	h2 := e2.hold("alice", "c1", "uid-1", "fp-1")
	d2 := Delegator{Authorizer: e2.auth}
	for i, want := range []string{"", "", ReasonQuotaExceeded} {
		_, err := d2.Delegate(context.Background(), caller, h2.token("greet"), "greet", toolwire.DelegateArgs{Peer: "bob"})
		if want == "" && err != nil {
			t.Fatalf("delegation %d: %v", i, err)
		}
		if want != "" {
			refusedFor(t, err, want)
		}
	}
}

// TestClassChangesBindAtOnce: a token minted before its ToolClass narrowed
// (a new pin, declared parameters) or went away is held to the class as it is
// now on the next call.
func TestClassChangesBindAtOnce(t *testing.T) {
	e := newEnv(t)
	e.grant("g", "alice", nil)
	h := e.hold("alice", "c1", "uid-1", "fp-1")
	if _, err := e.call("uid-1", "fp-1", h.token("greet"), "--repo=mine", "x"); err != nil {
		t.Fatal(err)
	}
	c := &v1alpha1.ToolClass{}
	if err := e.client.Get(context.Background(), "", "greet", c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Attenuation = &v1alpha1.Attenuation{PinnedParams: map[string]string{"repo": "team/app"}}
	c.Spec.Parameters = []string{"lang"}
	if err := e.client.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	_, err := e.call("uid-1", "fp-1", h.token("greet"), "--repo=mine", "x")
	refusedFor(t, err, ReasonBadParams)
	_, err = e.call("uid-1", "fp-1", h.token("greet"), "--verbose=1", "x")
	refusedFor(t, err, ReasonBadParams)
	a, err := e.call("uid-1", "fp-1", h.token("greet"), "--lang=en", "x")
	if err != nil || strings.Join(a.Args, " ") != "--lang=en --repo=team/app -- x" {
		t.Fatalf("args %v, %v", a, err)
	}
	if _, err := e.st.Delete(context.Background(), "toolclasses", "", "greet", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = e.call("uid-1", "fp-1", h.token("greet"), "x")
	refusedFor(t, err, ReasonRevoked)
}
