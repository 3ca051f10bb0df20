package controllers

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/convapi/convapitest"
	"aicli.dev/aicli/internal/monitor/remote"
	"aicli.dev/aicli/internal/secrets"
)

// outage is a TCP proxy in front of a server that can be cut and restored
// on the same address, as a remote supervisor going down and coming back.
type outage struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newOutage(t *testing.T, target string) *outage {
	o := &outage{t: t, target: target}
	o.up("127.0.0.1:0")
	t.Cleanup(o.down)
	return o
}

func (o *outage) up(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		o.t.Fatal(err)
	}
	o.mu.Lock()
	o.ln, o.addr = ln, ln.Addr().String()
	o.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", o.target)
			if err != nil {
				c.Close()
				continue
			}
			o.mu.Lock()
			o.conns = append(o.conns, c, b)
			o.mu.Unlock()
			go func() { _, _ = io.Copy(b, c); b.Close() }()
			go func() { _, _ = io.Copy(c, b); c.Close() }()
		}
	}()
}

func (o *outage) down() {
	o.mu.Lock()
	defer o.mu.Unlock()
	_ = o.ln.Close()
	for _, c := range o.conns {
		_ = c.Close()
	}
	o.conns = nil
}

func remoteAttachmentJSON(name, address, conversation string) string {
	conv := ""
	if conversation != "" {
		conv = fmt.Sprintf(`,"conversation":%q`, conversation)
	}
	return fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"MonitorAttachment","metadata":{"name":%q},`+
		`"spec":{"monitor":"watcher","target":{"agent":"worker"%s,"supervisor":{"address":%q,"tokenSecret":"b-token","caSecret":"b-ca","namespace":"team"}},`+
		`"trigger":{"keywords":[{"text":"panic"}]}}}`, name, conv, address)
}

// A remote target is checked on its supervisor through the public API: the
// token Secret, the token, the target agent and conversation, and whether the
// supervisor answers at all; an outage keeps the last known references.
func TestMonitorAttachmentRemoteTarget(t *testing.T) {
	e := newMonitorEnv(t)
	b := convapitest.Start(t)
	tlsURL, caFile := b.Server.ServeTLS(t, map[string][]string{"team-token": {"team"}})
	u, err := url.Parse(tlsURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newOutage(t, u.Host)
	address := "https://" + proxy.addr
	sec := secrets.Store{Dir: t.TempDir()}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := sec.Set("default", "b-ca", ca); err != nil {
		t.Fatal(err)
	}
	e.r.Remote = &remote.Dialer{Secrets: sec}
	e.h.create("agents", agentJSON("watcher"))
	e.h.create("monitorattachments", remoteAttachmentJSON("m", address, ""))
	reconcileRemote := func(name string) {
		t.Helper()
		res, err := e.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter != RemotePoll {
			t.Fatalf("RequeueAfter = %v, want %v: no local event tells about the remote side", res.RequeueAfter, RemotePoll)
		}
	}

	reconcileRemote("m")
	e.want("m", v1alpha1.ConditionReferencesResolved, metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound,
		`spec.target.supervisor.tokenSecret: Secret "b-token" does not exist`)
	e.want("m", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound, "")

	if err := sec.Set("default", "b-token", []byte("wrong")); err != nil {
		t.Fatal(err)
	}
	reconcileRemote("m")
	e.want("m", v1alpha1.ConditionReferencesResolved, metav1.ConditionFalse, v1alpha1.ReasonTokenRejected,
		`spec.target.supervisor.tokenSecret: supervisor `+address+` refused the token of Secret "b-token"`)
	e.want("m", v1alpha1.ConditionTargetReachable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, address)

	if err := sec.Set("default", "b-token", []byte("team-token")); err != nil {
		t.Fatal(err)
	}
	reconcileRemote("m")
	e.want("m", v1alpha1.ConditionReferencesResolved, metav1.ConditionFalse, v1alpha1.ReasonTargetNotFound,
		`spec.target.agent: agent "worker" does not exist in namespace "team" on supervisor `+address)

	b.CreateAgent(t, "team", "worker")
	b.CreateConversation(t, "team", "w1", "worker", v1alpha1.ConversationActive)
	b.CreateConversation(t, "team", "w2", "worker", v1alpha1.ConversationArchived)
	reconcileRemote("m")
	e.want("m", v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
	e.want("m", v1alpha1.ConditionReferencesResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "2 conversation(s), 1 not archived")
	convs := e.get("m").Status.Conversations
	if len(convs) != 2 || convs[0].Target != "w1" || convs[0].UID != b.UID(t, "team", "w1") || convs[0].Archived ||
		!convs[1].Archived || convs[0].Created == nil {
		t.Fatalf("conversations = %+v", convs)
	}

	// The supervisor goes away: TargetReachable and Ready say so, naming the
	// address; the references and the watched conversations stand.
	proxy.down()
	reconcileRemote("m")
	e.want("m", v1alpha1.ConditionTargetReachable, metav1.ConditionFalse, v1alpha1.ReasonTargetUnreachable, "supervisor "+address+" is unreachable")
	e.want("m", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonTargetUnreachable, address)
	e.want("m", v1alpha1.ConditionReferencesResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
	if got := e.get("m").Status.Conversations; len(got) != 2 {
		t.Fatalf("conversations while unreachable = %+v", got)
	}

	proxy.up(proxy.addr)
	reconcileRemote("m")
	e.want("m", v1alpha1.ConditionTargetReachable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
	e.want("m", v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")

	// One named conversation that does not exist there.
	e.h.create("monitorattachments", remoteAttachmentJSON("one", address, "nope"))
	reconcileRemote("one")
	e.want("one", v1alpha1.ConditionReferencesResolved, metav1.ConditionFalse, v1alpha1.ReasonTargetNotFound,
		`spec.target.conversation: conversation "nope" of agent "worker" does not exist in namespace "team" on supervisor `+address)

	// Never reached: Ready is False with the address, not "not yet observed".
	dead := newOutage(t, u.Host)
	deadAddress := "https://" + dead.addr
	dead.down()
	e.h.create("monitorattachments", remoteAttachmentJSON("dead", deadAddress, ""))
	reconcileRemote("dead")
	e.want("dead", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonTargetUnreachable, deadAddress)
}
