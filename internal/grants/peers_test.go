package grants

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
)

func agent(name string, peers *v1alpha1.PeerPolicy, labels map[string]string) v1alpha1.Agent {
	a := v1alpha1.Agent{Spec: v1alpha1.AgentSpec{Peers: peers}}
	a.Namespace, a.Name, a.Labels = "team", name, labels
	return a
}

func sendTo(s v1alpha1.PeerSet) *v1alpha1.PeerPolicy { return &v1alpha1.PeerPolicy{SendTo: &s} }

func TestMaySendIsPerDirection(t *testing.T) {
	a := agent("a", sendTo(v1alpha1.PeerSet{Agents: []string{"b"}}), nil)
	b := agent("b", &v1alpha1.PeerPolicy{}, nil)
	if err := MaySend(&a, &b, nil); err != nil {
		t.Fatalf("a→b: %v", err)
	}
	err := MaySend(&b, &a, nil)
	var pe *PermissionError
	if !errors.As(err, &pe) || pe.Missing != "spec.peers.sendTo" || !strings.Contains(err.Error(), `"b"'s spec.peers.sendTo does not include "a"`) {
		t.Fatalf("b→a: %v", err)
	}
}

func TestMaySendSources(t *testing.T) {
	worker := agent("w", nil, map[string]string{"role": "worker"})
	other := agent("o", nil, map[string]string{"role": "boss"})
	sel := agent("s", sendTo(v1alpha1.PeerSet{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}}}), nil)
	all := agent("all", sendTo(v1alpha1.PeerSet{All: true}), nil)
	none := agent("n", nil, nil)
	g := grant("g", "n", 0)
	g.Spec.Peers = []string{"w"}
	gs := []v1alpha1.Grant{g}
	for _, tc := range []struct {
		from, to *v1alpha1.Agent
		ok       bool
	}{
		{&sel, &worker, true}, {&sel, &other, false},
		{&all, &other, true}, {&all, &all, false}, // never to itself
		{&none, &worker, true}, {&none, &other, false}, // a Grant's peers
	} {
		if err := MaySend(tc.from, tc.to, gs); (err == nil) != tc.ok {
			t.Errorf("%s→%s: %v, want ok=%v", tc.from.Name, tc.to.Name, err, tc.ok)
		}
	}
	// A Grant being deleted allows nothing.
	now := metav1.Now()
	gs[0].DeletionTimestamp = &now
	if err := MaySend(&none, &worker, gs); err == nil {
		t.Error("a deleted grant's peers still allow the send")
	}
}

func TestMaySendReceiveFromAndNamespace(t *testing.T) {
	a := agent("a", sendTo(v1alpha1.PeerSet{All: true}), nil)
	b := agent("b", &v1alpha1.PeerPolicy{ReceiveFrom: &v1alpha1.PeerSet{Agents: []string{"c"}}}, nil)
	var pe *PermissionError
	if err := MaySend(&a, &b, nil); !errors.As(err, &pe) || pe.Missing != "spec.peers.receiveFrom" {
		t.Fatalf("receiveFrom not enforced: %v", err)
	}
	far := agent("b2", nil, nil)
	far.Namespace = "elsewhere"
	if err := MaySend(&a, &far, nil); !errors.As(err, &pe) || pe.Missing != "namespace" {
		t.Fatalf("cross-namespace: %v", err)
	}
	c := agent("c", sendTo(v1alpha1.PeerSet{All: true}), nil)
	if got := Recipients(&c, []v1alpha1.Agent{a, b, c, far}, nil); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("recipients of c = %v", got)
	}
}

func TestBuiltinsFollowPeersAndGrants(t *testing.T) {
	names := func(a v1alpha1.Agent, gs ...v1alpha1.Grant) []string {
		var out []string
		for _, t := range Builtins(&a, gs, nil) {
			out = append(out, t.Name)
		}
		return out
	}
	if got := names(agent("x", nil, nil)); got != nil {
		t.Fatalf("no peers, no grants: %v", got)
	}
	if got := names(agent("x", &v1alpha1.PeerPolicy{}, nil)); !reflect.DeepEqual(got, []string{"mail-inbox", "mail-peers", "mail-send"}) {
		t.Fatalf("peers: %v", got)
	}
	read := grant("r", "x", 0)
	read.Spec.Recall = []v1alpha1.BucketGrant{{Name: "notes", Access: v1alpha1.RecallRead}}
	if got := names(agent("x", nil, nil), read); !reflect.DeepEqual(got, []string{"recall"}) {
		t.Fatalf("read bucket: %v", got)
	}
	rw := grant("rw", "x", 0)
	rw.Spec.Recall = []v1alpha1.BucketGrant{{Name: "notes", Access: v1alpha1.RecallReadWrite}}
	rw.Spec.Observe = []v1alpha1.TargetRef{{Agent: "y"}}
	if got := names(agent("x", nil, nil), read, rw); !reflect.DeepEqual(got, []string{"recall", "remember", "transcript-read", "transcript-search"}) {
		t.Fatalf("rw + observe: %v", got)
	}
	if got := Buckets("x", []v1alpha1.Grant{read, rw}); got["notes"] != v1alpha1.RecallReadWrite {
		t.Fatalf("widest access = %v", got)
	}
	for _, tc := range []struct {
		agent, conv string
		ok          bool
	}{{"x", "any", true}, {"y", "c1", true}, {"z", "c1", false}} {
		if got := MayObserve("x", []v1alpha1.Grant{rw}, nil, tc.agent, tc.conv); got != tc.ok {
			t.Errorf("observe %s/%s = %v", tc.agent, tc.conv, got)
		}
	}
	one := grant("one", "x", 0)
	one.Spec.Observe = []v1alpha1.TargetRef{{Agent: "y", Conversation: "c1"}}
	if MayObserve("x", []v1alpha1.Grant{one}, nil, "y", "c2") || !MayObserve("x", []v1alpha1.Grant{one}, nil, "y", "c1") {
		t.Error("a conversation target covers only that conversation")
	}
	for _, b := range BuiltinNames {
		if errs := Validate(&v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{execTool(b)}}); len(errs) == 0 {
			t.Errorf("a grant may declare a tool named %q, shadowing the built-in", b)
		}
	}
}

func TestMonitorAttachmentsMountAdviseAndObserve(t *testing.T) {
	att := func(mode v1alpha1.MonitorMode, conv string) v1alpha1.MonitorAttachment {
		return v1alpha1.MonitorAttachment{Spec: v1alpha1.MonitorAttachmentSpec{Monitor: "m",
			Target: v1alpha1.MonitorTarget{Agent: "w", Conversation: conv}, Mode: mode}}
	}
	names := func(atts ...v1alpha1.MonitorAttachment) []string {
		var out []string
		a := agent("m", nil, nil)
		for _, t := range Builtins(&a, nil, atts) {
			out = append(out, t.Name)
		}
		return out
	}
	if got := names(att(v1alpha1.MonitorAdvise, "")); !reflect.DeepEqual(got, []string{"advise", "transcript-read", "transcript-search"}) {
		t.Fatalf("advise mode: %v", got)
	}
	if got := names(att("", "")); !reflect.DeepEqual(got, []string{"advise", "transcript-read", "transcript-search"}) {
		t.Fatalf("default mode: %v", got)
	}
	if got := names(att(v1alpha1.MonitorWatchOnly, "")); !reflect.DeepEqual(got, []string{"transcript-read", "transcript-search"}) {
		t.Fatalf("watch-only (may-inject withheld): %v", got)
	}
	remote := att(v1alpha1.MonitorAdvise, "")
	remote.Spec.Target.Supervisor = &v1alpha1.RemoteSupervisor{Address: "https://x", TokenSecret: "t"}
	if got := names(remote); !reflect.DeepEqual(got, []string{"advise", "transcript-read", "transcript-search"}) {
		t.Fatalf("remote target: %v", got)
	}
	// A remote target's agent name means nothing here: it grants reading no local conversation.
	if MayObserve("m", nil, []v1alpha1.MonitorAttachment{remote}, "w", "c1") {
		t.Fatal("a remote attachment lets its monitor read a local namesake's conversation")
	}
	one := []v1alpha1.MonitorAttachment{att(v1alpha1.MonitorWatchOnly, "c1")}
	if !MayObserve("m", nil, one, "w", "c1") || MayObserve("m", nil, one, "w", "c2") || MayObserve("other", nil, one, "w", "c1") {
		t.Fatal("may-observe of a conversation-scoped attachment")
	}
}
