package grants

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
)

// execTool is a grant's tool of class "echo" (echoClass).
func execTool(name string) v1alpha1.ToolGrant {
	return v1alpha1.ToolGrant{Name: name, ClassName: "echo"}
}

// class is a ToolClass running command.
func class(name, command string) *v1alpha1.ToolClass {
	c := &v1alpha1.ToolClass{Spec: v1alpha1.ToolClassSpec{Backend: v1alpha1.ToolBackend{Exec: &v1alpha1.ExecBackend{Command: command}},
		TimeoutSeconds: 30}}
	c.Name = name
	return c
}

// echoClasses holds the class every execTool names.
func echoClasses() map[string]*v1alpha1.ToolClass {
	return map[string]*v1alpha1.ToolClass{"echo": class("echo", "/bin/echo")}
}

func grant(name, subject string, age time.Duration, tools ...v1alpha1.ToolGrant) v1alpha1.Grant {
	g := v1alpha1.Grant{Spec: v1alpha1.GrantSpec{Subject: subject, Tools: tools}}
	g.Name, g.Generation = name, 1
	g.CreationTimestamp = metav1.NewTime(time.Unix(1_000_000, 0).Add(-age))
	return g
}

func TestValidateNamesTheField(t *testing.T) {
	noClass := v1alpha1.ToolGrant{Name: "x"}
	inline := v1alpha1.ToolGrant{Name: "y", Backend: &v1alpha1.ToolBackend{Exec: &v1alpha1.ExecBackend{Command: "/bin/sh"}}}
	secrets := execTool("z")
	secrets.SecretRefs = []v1alpha1.SecretRef{{Name: "s", Env: "S"}}
	cost := execTool("c")
	cost.CostUSD = "0.1"
	badPin := execTool("p")
	badPin.Attenuation = &v1alpha1.Attenuation{PinnedParams: map[string]string{"--a": "b"}}
	for _, tc := range []struct {
		name  string
		spec  v1alpha1.GrantSpec
		field string
	}{
		{"duplicate", v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{execTool("a"), execTool("a")}}, "spec.tools[1].name"},
		{"reserved", v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{execTool("aicli-tool")}}, "spec.tools[0].name"},
		{"no class", v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{noClass}}, "spec.tools[0].className"},
		{"inline backend", v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{inline}}, "spec.tools[0].backend"},
		{"inline secrets", v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{secrets}}, "spec.tools[0].secretRefs"},
		{"inline cost", v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{cost}}, "spec.tools[0].costUSD"},
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

// TestInlineBackendNamesTheClassToCreate: the refusal of a grant that still
// defines its backend says what to do instead.
func TestInlineBackendNamesTheClassToCreate(t *testing.T) {
	inline := v1alpha1.ToolGrant{Name: "greet", Backend: &v1alpha1.ToolBackend{Exec: &v1alpha1.ExecBackend{Command: "/bin/sh"}}}
	errs := Validate(&v1alpha1.GrantSpec{Tools: []v1alpha1.ToolGrant{inline}})
	msg := errs.ToAggregate().Error()
	for _, want := range []string{"kind: ToolClass", "metadata.name: greet", "spec.tools[0].className", InlineBackendMessage} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
}

func TestValidateClassNamesTheField(t *testing.T) {
	relative := class("r", "echo")
	secretNoEnv := class("s", "/bin/echo")
	secretNoEnv.Spec.SecretRefs = []v1alpha1.SecretRef{{Name: "s"}}
	httpNoHeader := &v1alpha1.ToolClass{Spec: v1alpha1.ToolClassSpec{Backend: v1alpha1.ToolBackend{HTTP: &v1alpha1.HTTPBackend{URL: "http://x"}},
		SecretRefs: []v1alpha1.SecretRef{{Name: "s", Env: "S"}}}}
	dupSecret := class("d", "/bin/echo")
	dupSecret.Spec.SecretRefs = []v1alpha1.SecretRef{{Name: "s", Env: "A"}, {Name: "s", Env: "B", Namespace: "ops"}}
	both := class("b", "/bin/echo")
	both.Spec.Backend.HTTP = &v1alpha1.HTTPBackend{URL: "http://x"}
	for _, tc := range []struct {
		name  string
		class *v1alpha1.ToolClass
		field string
	}{
		{"no backend", &v1alpha1.ToolClass{}, "spec.backend"},
		{"two backends", both, "spec.backend"},
		{"relative command", relative, "spec.backend.exec.command"},
		{"exec secret without env", secretNoEnv, "spec.secretRefs[0].env"},
		{"http secret without header", httpNoHeader, "spec.secretRefs[0].header"},
		{"duplicate secret", dupSecret, "spec.secretRefs[1].name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateClass(&tc.class.Spec)
			if len(errs) != 1 || errs[0].Field != tc.field {
				t.Fatalf("errors %v, want one on %s", errs, tc.field)
			}
		})
	}
}

// TestResolveOnlyNarrowsTheClass: what runs is the class's; the grant can
// shorten, restrict and pin, and a tool that asks for more, names a missing
// class or one that does not admit the namespace does not resolve.
func TestResolveOnlyNarrowsTheClass(t *testing.T) {
	c := class("gh", "/usr/bin/gh")
	c.Spec.Parameters = []string{"repo", "title"}
	c.Spec.CostUSD = "0.01"
	c.Spec.Usage = "gh issue"
	c.Spec.SecretRefs = []v1alpha1.SecretRef{{Name: "gh-token", Env: "GH_TOKEN"}, {Name: "ops", Env: "OPS", Namespace: "aicli-system"}}
	c.Spec.Attenuation = &v1alpha1.Attenuation{PinnedParams: map[string]string{"host": "github.com"}, MaxCallsPerHour: 100}
	t0 := v1alpha1.ToolGrant{Name: "issue", ClassName: "gh", TimeoutSeconds: 10, Parameters: []string{"title"},
		Attenuation: &v1alpha1.Attenuation{PinnedParams: map[string]string{"repo": "team/app"}, MaxCallsPerHour: 5}}
	r, bad := Resolve("team-a", &t0, nil, c)
	if bad != nil {
		t.Fatal(bad.Message)
	}
	if r.Backend.Exec.Command != "/usr/bin/gh" || r.TimeoutSeconds != 10 || r.CostUSD != "0.01" || r.Usage != "gh issue" ||
		strings.Join(r.Parameters, ",") != "title" || r.Attenuation.MaxCallsPerHour != 5 ||
		r.Attenuation.PinnedParams["host"] != "github.com" || r.Attenuation.PinnedParams["repo"] != "team/app" {
		t.Fatalf("resolved %+v", r)
	}
	if r.SecretRefs[0].Namespace != "team-a" || r.SecretRefs[1].Namespace != "aicli-system" {
		t.Fatalf("secret namespaces %+v", r.SecretRefs)
	}

	restricted := class("gh", "/usr/bin/gh")
	restricted.Spec.Namespaces = []string{"team-b"}
	repin := t0.DeepCopy()
	repin.Attenuation.PinnedParams["host"] = "evil.example"
	longer := t0.DeepCopy()
	longer.TimeoutSeconds = 60
	extra := t0.DeepCopy()
	extra.Parameters = []string{"body"}
	for _, tc := range []struct {
		name   string
		tool   *v1alpha1.ToolGrant
		class  *v1alpha1.ToolClass
		reason string
	}{
		{"missing class", &t0, nil, UnresolvedNoClass},
		{"namespace not admitted", &t0, restricted, UnresolvedNotAllowed},
		{"class pin overridden", repin, c, UnresolvedWider},
		{"longer timeout", longer, c, UnresolvedWider},
		{"parameter the class lacks", extra, c, UnresolvedWider},
		{"inline backend", &v1alpha1.ToolGrant{Name: "x", Backend: &v1alpha1.ToolBackend{}}, c, UnresolvedInline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, bad := Resolve("team-a", tc.tool, nil, tc.class); bad == nil || bad.Reason != tc.reason {
				t.Fatalf("unresolved %+v, want reason %s", bad, tc.reason)
			}
		})
	}
}

func TestEffectiveOldestGrantKeepsAConflictingTool(t *testing.T) {
	all := []v1alpha1.Grant{
		grant("young", "agent", time.Minute, execTool("greet"), execTool("b")),
		grant("old", "agent", time.Hour, execTool("greet")),
		grant("other-subject", "someone", 2*time.Hour, execTool("c")),
		grant("invalid", "agent", 3*time.Hour, v1alpha1.ToolGrant{Name: "d"}),
		grant("unresolved", "agent", 4*time.Hour, v1alpha1.ToolGrant{Name: "b", ClassName: "gone"}),
	}
	tools, conflicts, unresolved := Effective(all, echoClasses(), "agent")
	if got := strings.Join(Names(tools), ","); got != "b,greet" {
		t.Fatalf("tools %s", got)
	}
	if tools[1].Grant != "old" || tools[0].Grant != "young" {
		t.Fatalf("owners %+v", tools)
	}
	if len(conflicts) != 1 || conflicts[0].Kept != "old" || conflicts[0].Losers[0] != "young" {
		t.Fatalf("conflicts %+v", conflicts)
	}
	// An unresolved tool claims no name: the younger grant's b is held.
	if len(unresolved) != 1 || unresolved[0].Grant != "unresolved" || unresolved[0].Reason != UnresolvedNoClass {
		t.Fatalf("unresolved %+v", unresolved)
	}
}

func TestEffectiveFoldsGrantAttenuationIn(t *testing.T) {
	g := grant("g", "agent", 0, execTool("a"))
	later, sooner := metav1.NewTime(time.Unix(2000, 0)), metav1.NewTime(time.Unix(1000, 0))
	g.Spec.Tools[0].Attenuation = &v1alpha1.Attenuation{MaxCallsPerHour: 10, ExpiresAt: &later, PinnedParams: map[string]string{"a": "1"}}
	g.Spec.Attenuation = &v1alpha1.Attenuation{MaxCallsPerHour: 5, ExpiresAt: &sooner, PinnedParams: map[string]string{"b": "2"}}
	tools, _, _ := Effective([]v1alpha1.Grant{g}, echoClasses(), "agent")
	a := tools[0].Attenuation
	if a.MaxCallsPerHour != 5 || !a.ExpiresAt.Equal(&sooner) || a.PinnedParams["a"] != "1" || a.PinnedParams["b"] != "2" {
		t.Fatalf("attenuation %+v", a)
	}
}

func TestNarrower(t *testing.T) {
	exp := metav1.NewTime(time.Unix(1000, 0))
	parent := execTool("a")
	parent.TimeoutSeconds = 30
	parent.Parameters = []string{"repo", "title"}
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
		func(c *v1alpha1.ToolGrant) { c.ClassName = "shell" },
		func(c *v1alpha1.ToolGrant) {
			c.Backend = &v1alpha1.ToolBackend{Exec: &v1alpha1.ExecBackend{Command: "/bin/sh"}}
		},
		func(c *v1alpha1.ToolGrant) { c.SecretRefs = []v1alpha1.SecretRef{{Name: "more", Env: "M"}} },
		func(c *v1alpha1.ToolGrant) { c.Parameters = nil },
		func(c *v1alpha1.ToolGrant) { c.Parameters = []string{"repo", "other"} },
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
	narrower.Parameters = []string{"repo"}
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
	if tools, _, _ := Effective(all, echoClasses(), "bob"); len(tools) != 1 || tools[0].Parent != "p" {
		t.Fatalf("bob holds %+v", tools)
	}
	wider := *child.DeepCopy()
	wider.Spec.Attenuation.MaxCallsPerHour = 50
	if err := DelegationValid(&wider, []v1alpha1.Grant{parent, wider}); err == nil {
		t.Fatal("a wider delegation passed")
	}
	if tools, _, _ := Effective([]v1alpha1.Grant{parent, wider}, echoClasses(), "bob"); len(tools) != 0 {
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
