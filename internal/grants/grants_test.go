package grants

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
)

func execTool(name string) v1alpha1.ToolGrant {
	return v1alpha1.ToolGrant{Name: name, Backend: v1alpha1.ToolBackend{Exec: &v1alpha1.ExecBackend{Command: "/bin/echo"}}}
}

func grant(name, subject string, age time.Duration, tools ...v1alpha1.ToolGrant) v1alpha1.Grant {
	g := v1alpha1.Grant{Spec: v1alpha1.GrantSpec{Subject: subject, Tools: tools}}
	g.Name, g.Generation = name, 1
	g.CreationTimestamp = metav1.NewTime(time.Unix(1_000_000, 0).Add(-age))
	return g
}

func TestValidateNamesTheField(t *testing.T) {
	noBackend := v1alpha1.ToolGrant{Name: "x"}
	relative := v1alpha1.ToolGrant{Name: "y", Backend: v1alpha1.ToolBackend{Exec: &v1alpha1.ExecBackend{Command: "echo"}}}
	secretNoEnv := execTool("z")
	secretNoEnv.SecretRefs = []v1alpha1.SecretRef{{Name: "s"}}
	httpNoHeader := v1alpha1.ToolGrant{Name: "h", Backend: v1alpha1.ToolBackend{HTTP: &v1alpha1.HTTPBackend{URL: "http://x"}},
		SecretRefs: []v1alpha1.SecretRef{{Name: "s", Env: "S"}}}
	badPin := execTool("p")
	badPin.Attenuation = &v1alpha1.Attenuation{PinnedParams: map[string]string{"--a": "b"}}
	for _, tc := range []struct {
		name  string
		spec  v1alpha1.GrantSpec
		field string
	}{
		{"duplicate", v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{execTool("a"), execTool("a")}}, "spec.tools[1].name"},
		{"reserved", v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{execTool("aicli-tool")}}, "spec.tools[0].name"},
		{"no backend", v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{noBackend}}, "spec.tools[0].backend"},
		{"relative command", v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{relative}}, "spec.tools[0].backend.exec.command"},
		{"exec secret without env", v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{secretNoEnv}}, "spec.tools[0].secretRefs[0].env"},
		{"http secret without header", v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{httpNoHeader}}, "spec.tools[0].secretRefs[0].header"},
		{"bad pin", v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{badPin}}, "spec.tools[0].attenuation.pinnedParams"},
		{"delegation without parent", v1alpha1.GrantSpec{Delegation: &v1alpha1.Delegation{By: "a"}}, "spec.delegation.parent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(&tc.spec)
			if len(errs) != 1 || errs[0].Field != tc.field {
				t.Fatalf("errors %v, want one on %s", errs, tc.field)
			}
		})
	}
	ok := v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{execTool("a"), execTool("b")}}
	if errs := Validate(&ok); len(errs) != 0 {
		t.Fatal(errs)
	}
}

func TestEffectiveOldestGrantKeepsAConflictingTool(t *testing.T) {
	all := []v1alpha1.Grant{
		grant("young", "agent", time.Minute, execTool("greet"), execTool("b")),
		grant("old", "agent", time.Hour, execTool("greet")),
		grant("other-subject", "someone", 2*time.Hour, execTool("c")),
		grant("invalid", "agent", 3*time.Hour, v1alpha1.ToolGrant{Name: "d"}),
	}
	tools, conflicts := Effective(all, "agent")
	if got := strings.Join(Names(tools), ","); got != "b,greet" {
		t.Fatalf("tools %s", got)
	}
	if tools[1].Grant != "old" || tools[0].Grant != "young" {
		t.Fatalf("owners %+v", tools)
	}
	if len(conflicts) != 1 || conflicts[0].Kept != "old" || conflicts[0].Losers[0] != "young" {
		t.Fatalf("conflicts %+v", conflicts)
	}
}

func TestEffectiveFoldsGrantAttenuationIn(t *testing.T) {
	g := grant("g", "agent", 0, execTool("a"))
	later, sooner := metav1.NewTime(time.Unix(2000, 0)), metav1.NewTime(time.Unix(1000, 0))
	g.Spec.Tools[0].Attenuation = &v1alpha1.Attenuation{MaxCallsPerHour: 10, ExpiresAt: &later, PinnedParams: map[string]string{"a": "1"}}
	g.Spec.Attenuation = &v1alpha1.Attenuation{MaxCallsPerHour: 5, ExpiresAt: &sooner, PinnedParams: map[string]string{"b": "2"}}
	tools, _ := Effective([]v1alpha1.Grant{g}, "agent")
	a := tools[0].Attenuation
	if a.MaxCallsPerHour != 5 || !a.ExpiresAt.Equal(&sooner) || a.PinnedParams["a"] != "1" || a.PinnedParams["b"] != "2" {
		t.Fatalf("attenuation %+v", a)
	}
}

func TestNarrower(t *testing.T) {
	exp := metav1.NewTime(time.Unix(1000, 0))
	parent := execTool("a")
	parent.TimeoutSeconds = 30
	parent.Attenuation = &v1alpha1.Attenuation{MaxCallsPerHour: 10, ExpiresAt: &exp, PinnedParams: map[string]string{"k": "v"}}
	same := *parent.DeepCopy()
	if err := Narrower(&same, &parent); err != nil {
		t.Fatal(err)
	}
	wider := []func(*v1alpha1.ToolGrant){
		func(c *v1alpha1.ToolGrant) { c.Attenuation.MaxCallsPerHour = 11 },
		func(c *v1alpha1.ToolGrant) { c.Attenuation.MaxCallsPerHour = 0 },
		func(c *v1alpha1.ToolGrant) { c.Attenuation.ExpiresAt = nil },
		func(c *v1alpha1.ToolGrant) { c.Attenuation.PinnedParams = map[string]string{"k": "other"} },
		func(c *v1alpha1.ToolGrant) { c.Attenuation = nil },
		func(c *v1alpha1.ToolGrant) { c.TimeoutSeconds = 60 },
		func(c *v1alpha1.ToolGrant) { c.Backend.Exec.Command = "/bin/sh" },
		func(c *v1alpha1.ToolGrant) { c.SecretRefs = []v1alpha1.SecretRef{{Name: "more", Env: "M"}} },
	}
	for i, widen := range wider {
		c := parent.DeepCopy()
		widen(c)
		if Narrower(c, &parent) == nil {
			t.Errorf("case %d: a wider child passed", i)
		}
	}
	narrower := parent.DeepCopy()
	narrower.Attenuation.MaxCallsPerHour = 1
	narrower.Attenuation.PinnedParams["extra"] = "x"
	narrower.TimeoutSeconds = 5
	if err := Narrower(narrower, &parent); err != nil {
		t.Fatal(err)
	}
}

func TestDelegationValid(t *testing.T) {
	parent := grant("p", "alice", time.Hour, execTool("greet"))
	parent.Spec.Tools[0].Attenuation = &v1alpha1.Attenuation{MaxCallsPerHour: 10}
	child := grant("c", "bob", 0, execTool("greet"))
	child.Spec.Delegation = &v1alpha1.Delegation{Parent: "p", By: "alice"}
	child.Spec.Attenuation = &v1alpha1.Attenuation{MaxCallsPerHour: 5}
	all := []v1alpha1.Grant{parent, child}
	if err := DelegationValid(&all[1], all); err != nil {
		t.Fatal(err)
	}
	if tools, _ := Effective(all, "bob"); len(tools) != 1 || tools[0].Parent != "p" {
		t.Fatalf("bob holds %+v", tools)
	}
	wider := *child.DeepCopy()
	wider.Spec.Attenuation.MaxCallsPerHour = 50
	if err := DelegationValid(&wider, []v1alpha1.Grant{parent, wider}); err == nil {
		t.Fatal("a wider delegation passed")
	}
	if tools, _ := Effective([]v1alpha1.Grant{parent, wider}, "bob"); len(tools) != 0 {
		t.Fatalf("a wider delegation gives %+v", tools)
	}
	if err := DelegationValid(&all[1], []v1alpha1.Grant{child}); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("missing parent: %v", err)
	}
	moved := *parent.DeepCopy()
	moved.Spec.Subject = "carol"
	if err := DelegationValid(&all[1], []v1alpha1.Grant{moved, child}); err == nil {
		t.Fatal("a parent no longer held by the delegator passed")
	}
	loop := grant("loop", "bob", 0, execTool("greet"))
	loop.Spec.Delegation = &v1alpha1.Delegation{Parent: "loop", By: "bob"}
	if err := DelegationValid(&loop, []v1alpha1.Grant{loop}); err == nil {
		t.Fatal("a delegation cycle passed")
	}
}
