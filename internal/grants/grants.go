// Package grants computes what an agent's Grants allow: validation beyond the
// schema, the effective tool set of one agent (which grant owns which tool),
// and the narrowing rules delegation and attenuation obey. It is pure: the
// controllers, the admission and the authority call it with objects they read.
package grants

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"aicli.dev/aicli/apis/v1alpha1"
)

// ReservedToolNames are executable names a grant may not use: the multi-call
// binary itself, its delegate subcommand and the built-in tools.
var ReservedToolNames = append([]string{"aicli-tool", "delegate"}, BuiltinNames...)

// Validate checks a grant spec beyond what the schema can say; each error
// names its field.
func Validate(spec *v1alpha1.GrantSpec) field.ErrorList {
	var errs field.ErrorList
	tools := field.NewPath("spec", "tools")
	seen := map[string]bool{}
	for i := range spec.Tools {
		t := &spec.Tools[i]
		p := tools.Index(i)
		if seen[t.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), t.Name))
		}
		seen[t.Name] = true
		for _, r := range ReservedToolNames {
			if t.Name == r {
				errs = append(errs, field.Invalid(p.Child("name"), t.Name, "reserved for the tool binary itself"))
			}
		}
		errs = append(errs, validateBackend(p, t)...)
		errs = append(errs, validateAttenuation(p.Child("attenuation"), t.Attenuation)...)
	}
	errs = append(errs, validateAttenuation(field.NewPath("spec", "attenuation"), spec.Attenuation)...)
	if d := spec.Delegation; d != nil && d.Parent == "" {
		errs = append(errs, field.Required(field.NewPath("spec", "delegation", "parent"), "a delegated grant names its parent"))
	}
	return errs
}

func validateBackend(p *field.Path, t *v1alpha1.ToolGrant) field.ErrorList {
	var errs field.ErrorList
	b := p.Child("backend")
	switch {
	case t.Backend.Exec == nil && t.Backend.HTTP == nil:
		return append(errs, field.Required(b, "set exactly one of exec or http"))
	case t.Backend.Exec != nil && t.Backend.HTTP != nil:
		return append(errs, field.Invalid(b, "exec+http", "set exactly one of exec or http"))
	case t.Backend.Exec != nil && !path.IsAbs(t.Backend.Exec.Command):
		errs = append(errs, field.Invalid(b.Child("exec", "command"), t.Backend.Exec.Command,
			"must be an absolute path on the supervisor host (no PATH lookup)"))
	}
	for j, s := range t.SecretRefs {
		sp := p.Child("secretRefs").Index(j)
		switch {
		case t.Backend.Exec != nil && s.Env == "":
			errs = append(errs, field.Required(sp.Child("env"), "an exec backend receives a secret in an environment variable"))
		case t.Backend.HTTP != nil && s.Header == "":
			errs = append(errs, field.Required(sp.Child("header"), "an http backend receives a secret in a request header"))
		}
	}
	return errs
}

func validateAttenuation(p *field.Path, a *v1alpha1.Attenuation) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	for k := range a.PinnedParams {
		if k == "" || strings.ContainsAny(k, "= \t\n") || strings.HasPrefix(k, "-") {
			errs = append(errs, field.Invalid(p.Child("pinnedParams"), k, "a parameter name has no '=', spaces or leading '-'"))
		}
	}
	return errs
}

// Tool is one tool an agent holds: the tool grant with every attenuation of
// its grant folded in, and where it comes from.
type Tool struct {
	v1alpha1.ToolGrant
	// Grant and Generation name the grant (the token's revocation check).
	Grant      string
	Generation int64
	// Parent is the parent grant of a delegated grant ("" otherwise).
	Parent string
	// Builtin marks a built-in tool (Builtins): served by the supervisor
	// itself, Grant is BuiltinGrant and there is no backend.
	Builtin bool
}

// Conflict is a tool name claimed by more than one grant of the agent; the
// oldest grant keeps it.
type Conflict struct {
	Tool   string
	Kept   string
	Losers []string
}

// Effective returns the tools an agent holds from its grants (any order; only
// those whose spec.subject is the agent, that validate and, when delegated,
// stay within their parent count), sorted by
// name, and the name conflicts. Grants being deleted hold nothing.
func Effective(all []v1alpha1.Grant, agent string) ([]Tool, []Conflict) {
	grants := held(all, agent)
	sort.SliceStable(grants, func(i, j int) bool { return older(grants[i], grants[j]) })
	owner := map[string]*Tool{}
	conflicts := map[string]*Conflict{}
	var out []Tool
	for _, g := range grants {
		for _, t := range g.Spec.Tools {
			if kept, ok := owner[t.Name]; ok {
				c := conflicts[t.Name]
				if c == nil {
					c = &Conflict{Tool: t.Name, Kept: kept.Grant}
					conflicts[t.Name] = c
				}
				c.Losers = append(c.Losers, g.Name)
				continue
			}
			tool := Tool{ToolGrant: *t.DeepCopy(), Grant: g.Name, Generation: g.Generation}
			tool.Attenuation = Narrowest(t.Attenuation, g.Spec.Attenuation)
			if g.Spec.Delegation != nil {
				tool.Parent = g.Spec.Delegation.Parent
			}
			out = append(out, tool)
			owner[t.Name] = &out[len(out)-1]
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	cs := make([]Conflict, 0, len(conflicts))
	for _, c := range conflicts {
		cs = append(cs, *c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Tool < cs[j].Tool })
	return out, cs
}

func older(a, b *v1alpha1.Grant) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// Names returns the tool names, in order.
func Names(tools []Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// Narrowest combines attenuations: every pin of either, the lower call cap,
// the earlier expiry. Two different pins for one parameter cannot both hold;
// the result keeps the first (a's) and Narrower reports such a pair as wider.
func Narrowest(a, b *v1alpha1.Attenuation) *v1alpha1.Attenuation {
	if a == nil && b == nil {
		return nil
	}
	out := &v1alpha1.Attenuation{}
	for _, x := range []*v1alpha1.Attenuation{a, b} {
		if x == nil {
			continue
		}
		for k, v := range x.PinnedParams {
			if out.PinnedParams == nil {
				out.PinnedParams = map[string]string{}
			}
			if _, ok := out.PinnedParams[k]; !ok {
				out.PinnedParams[k] = v
			}
		}
		if x.MaxCallsPerHour > 0 && (out.MaxCallsPerHour == 0 || x.MaxCallsPerHour < out.MaxCallsPerHour) {
			out.MaxCallsPerHour = x.MaxCallsPerHour
		}
		if x.ExpiresAt != nil && (out.ExpiresAt == nil || x.ExpiresAt.Before(out.ExpiresAt)) {
			out.ExpiresAt = x.ExpiresAt.DeepCopy()
		}
	}
	return out
}

// Narrower returns nil when child allows no more than parent: the same
// backend and secrets, every parent pin kept with its value, a call cap and
// an expiry at least as tight, a timeout no longer. Otherwise the error says
// what is wider.
func Narrower(child, parent *v1alpha1.ToolGrant) error {
	if child.Name != parent.Name {
		return fmt.Errorf("tool %q is not the parent's tool %q", child.Name, parent.Name)
	}
	if !backendEqual(child, parent) {
		return fmt.Errorf("tool %q: backend or secrets differ from the parent's", child.Name)
	}
	if parent.TimeoutSeconds > 0 && (child.TimeoutSeconds == 0 || child.TimeoutSeconds > parent.TimeoutSeconds) {
		return fmt.Errorf("tool %q: timeoutSeconds %d exceeds the parent's %d", child.Name, child.TimeoutSeconds, parent.TimeoutSeconds)
	}
	c, p := child.Attenuation, parent.Attenuation
	if p == nil {
		return nil
	}
	if c == nil {
		c = &v1alpha1.Attenuation{}
	}
	for k, v := range p.PinnedParams {
		if got, ok := c.PinnedParams[k]; !ok || got != v {
			return fmt.Errorf("tool %q: parameter %q must stay pinned to %q", child.Name, k, v)
		}
	}
	if p.MaxCallsPerHour > 0 && (c.MaxCallsPerHour == 0 || c.MaxCallsPerHour > p.MaxCallsPerHour) {
		return fmt.Errorf("tool %q: maxCallsPerHour %d exceeds the parent's %d", child.Name, c.MaxCallsPerHour, p.MaxCallsPerHour)
	}
	if p.ExpiresAt != nil && (c.ExpiresAt == nil || c.ExpiresAt.After(p.ExpiresAt.Time)) {
		return fmt.Errorf("tool %q: expires after the parent (%s)", child.Name, p.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

func backendEqual(a, b *v1alpha1.ToolGrant) bool {
	x, y := a.DeepCopy(), b.DeepCopy()
	x.Attenuation, y.Attenuation = nil, nil
	x.TimeoutSeconds, y.TimeoutSeconds = 0, 0
	x.Usage, y.Usage = "", ""
	return equality.Semantic.DeepEqual(x, y)
}

// maxDelegationDepth bounds a chain of delegations (and breaks cycles).
const maxDelegationDepth = 8

// DelegationValid returns nil when a delegated grant stays within its parent:
// the parent exists in all (the grants of the namespace), is held by the
// agent that delegated, is itself valid, and holds every tool of child at
// least as widely (Narrower, with each grant's attenuation folded in). A
// grant without spec.delegation is valid.
func DelegationValid(child *v1alpha1.Grant, all []v1alpha1.Grant) error {
	return delegationValid(child, all, 0)
}

func delegationValid(child *v1alpha1.Grant, all []v1alpha1.Grant, depth int) error {
	d := child.Spec.Delegation
	if d == nil {
		return nil
	}
	if depth >= maxDelegationDepth {
		return fmt.Errorf("grant %q: delegation chain longer than %d", child.Name, maxDelegationDepth)
	}
	var parent *v1alpha1.Grant
	for i := range all {
		if all[i].Name == d.Parent && all[i].DeletionTimestamp == nil {
			parent = &all[i]
		}
	}
	switch {
	case parent == nil:
		return fmt.Errorf("parent grant %q is gone", d.Parent)
	case parent.Spec.Subject != d.By:
		return fmt.Errorf("parent grant %q is no longer held by %q", d.Parent, d.By)
	}
	if err := delegationValid(parent, all, depth+1); err != nil {
		return err
	}
	for _, ct := range child.Spec.Tools {
		c := *ct.DeepCopy()
		c.Attenuation = Narrowest(ct.Attenuation, child.Spec.Attenuation)
		var p *v1alpha1.ToolGrant
		for _, pt := range parent.Spec.Tools {
			if pt.Name == ct.Name {
				p = pt.DeepCopy()
				p.Attenuation = Narrowest(pt.Attenuation, parent.Spec.Attenuation)
			}
		}
		if p == nil {
			return fmt.Errorf("parent grant %q does not hold tool %q", d.Parent, ct.Name)
		}
		if err := Narrower(&c, p); err != nil {
			return fmt.Errorf("wider than parent grant %q: %w", d.Parent, err)
		}
	}
	return nil
}
