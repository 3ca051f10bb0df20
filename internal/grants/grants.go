// Package grants computes what an agent's Grants allow: validation beyond the
// schema, the effective tool set of one agent (which grant owns which tool),
// and the narrowing rules delegation and attenuation obey. It is pure: the
// controllers, the admission and the authority call it with objects they read.
package grants

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"aicli.dev/aicli/apis/v1alpha1"
)

// ReservedToolNames are executable names a grant may not use: the multi-call
// binary itself, its delegate subcommand and the built-in tools.
var ReservedToolNames = append([]string{"aicli-tool", "delegate"}, BuiltinNames...)

// Validate checks a grant spec beyond what the schema can say; each error
// names its field. A tool that still carries a host-side backend, secrets or a
// cost (the shape before ToolClasses) is refused with the class to create.
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
		errs = append(errs, validateInline(p, t)...)
		errs = append(errs, validateAttenuation(p.Child("attenuation"), t.Attenuation)...)
	}
	errs = append(errs, validateAttenuation(field.NewPath("spec", "attenuation"), spec.Attenuation)...)
	if d := spec.Delegation; d != nil && d.Parent == "" {
		errs = append(errs, field.Required(field.NewPath("spec", "delegation", "parent"), "a delegated grant names its parent"))
	}
	return errs
}

// InlineBackendMessage starts the refusal of a grant tool that defines what
// runs on the host itself; the grant controller reports it as ReasonInlineBackend.
const InlineBackendMessage = "host-side backends, their secrets and costs are defined by cluster admins in a ToolClass"

// validateInline refuses the fields a ToolClass now owns and requires the class.
func validateInline(p *field.Path, t *v1alpha1.ToolGrant) field.ErrorList {
	var inline []string
	if t.Backend != nil {
		inline = append(inline, "backend")
	}
	if len(t.SecretRefs) > 0 {
		inline = append(inline, "secretRefs")
	}
	if t.CostUSD != "" {
		inline = append(inline, "costUSD")
	}
	if len(inline) > 0 {
		return field.ErrorList{field.Forbidden(p.Child(inline[0]), fmt.Sprintf(
			"%s: ask a cluster admin to create one (kind: ToolClass, metadata.name: %s, spec: {%s as written here}) "+
				"and set %s to its name instead of %s (docs/tools.md)",
			InlineBackendMessage, t.Name, strings.Join(inline, ", "), p.Child("className"), strings.Join(inline, ", ")))}
	}
	if t.ClassName == "" {
		return field.ErrorList{field.Required(p.Child("className"), "name the ToolClass that runs the tool (aictl get toolclasses)")}
	}
	return nil
}

// ValidateClass checks a ToolClass spec beyond the schema: one backend, an
// absolute command, secrets routed where the backend can use them, pins.
func ValidateClass(spec *v1alpha1.ToolClassSpec) field.ErrorList {
	var errs field.ErrorList
	b := field.NewPath("spec", "backend")
	switch {
	case spec.Backend.Exec == nil && spec.Backend.HTTP == nil:
		return append(errs, field.Required(b, "set exactly one of exec or http"))
	case spec.Backend.Exec != nil && spec.Backend.HTTP != nil:
		return append(errs, field.Invalid(b, "exec+http", "set exactly one of exec or http"))
	case spec.Backend.Exec != nil && !path.IsAbs(spec.Backend.Exec.Command):
		errs = append(errs, field.Invalid(b.Child("exec", "command"), spec.Backend.Exec.Command,
			"must be an absolute path on the supervisor host (no PATH lookup)"))
	}
	names := map[string]bool{}
	for j, s := range spec.SecretRefs {
		sp := field.NewPath("spec", "secretRefs").Index(j)
		if names[s.Name] {
			errs = append(errs, field.Duplicate(sp.Child("name"), s.Name))
		}
		names[s.Name] = true
		switch {
		case spec.Backend.Exec != nil && s.Env == "":
			errs = append(errs, field.Required(sp.Child("env"), "an exec backend receives a secret in an environment variable"))
		case spec.Backend.HTTP != nil && s.Header == "":
			errs = append(errs, field.Required(sp.Child("header"), "an http backend receives a secret in a request header"))
		}
	}
	return append(errs, validateAttenuation(field.NewPath("spec", "attenuation"), spec.Attenuation)...)
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

// ResolvedTool is what runs when an agent calls a granted tool: the grant's
// tool entry narrowed onto its ToolClass, every attenuation folded in.
type ResolvedTool struct {
	// Name is the executable name the CLI runs.
	Name string
	// Usage is the grant's usage, or the class's.
	Usage string
	// ClassName names the ToolClass ("" for a built-in).
	ClassName string
	// Backend is the class's backend.
	Backend v1alpha1.ToolBackend
	// SecretRefs are the class's, each with its namespace resolved.
	SecretRefs []v1alpha1.SecretRef
	// TimeoutSeconds is the shorter of the grant's and the class's (0: the server's default).
	TimeoutSeconds int32
	// CostUSD is the class's cost per call.
	CostUSD string
	// Parameters are the only --NAME=VALUE options a caller may pass; nil: not restricted.
	Parameters []string
	// Attenuation is the narrowest of the class's, the tool's and the grant's.
	Attenuation *v1alpha1.Attenuation
}

// Tool is one tool an agent holds and where it comes from.
type Tool struct {
	ResolvedTool
	// Grant and Generation name the grant (the token's revocation check).
	Grant      string
	Generation int64
	// Parent is the parent grant of a delegated grant ("" otherwise).
	Parent string
	// Builtin marks a built-in tool (Builtins): served by the supervisor
	// itself, Grant is BuiltinGrant and there is no backend.
	Builtin bool
}

// Reasons a grant's tool does not resolve (Unresolved.Reason), as the grant's
// condition reasons.
const (
	UnresolvedInvalid    = v1alpha1.ReasonInvalidSpec
	UnresolvedInline     = v1alpha1.ReasonInlineBackend
	UnresolvedNoClass    = v1alpha1.ReasonClassNotFound
	UnresolvedNotAllowed = v1alpha1.ReasonClassNotAllowed
	UnresolvedWider      = v1alpha1.ReasonWiderThanClass
)

// Unresolved is a grant's tool that cannot run: its class is missing, does not
// admit the namespace, or the tool asks for more than the class gives.
type Unresolved struct {
	Grant, Tool string
	// Reason is one of the Unresolved* reasons.
	Reason string
	// Message says what is wrong, naming the field.
	Message string
}

// Resolve narrows tool t, of a grant in namespace ns whose own attenuation is
// grantAtt, onto class c (nil: missing). Only the class says what runs; the
// grant may shorten the timeout, restrict the parameters and add pins, caps
// and an earlier expiry, never widen.
func Resolve(ns string, t *v1alpha1.ToolGrant, grantAtt *v1alpha1.Attenuation, c *v1alpha1.ToolClass) (ResolvedTool, *Unresolved) {
	bad := func(reason, format string, args ...any) (ResolvedTool, *Unresolved) {
		return ResolvedTool{}, &Unresolved{Tool: t.Name, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case t.Backend != nil || len(t.SecretRefs) > 0 || t.CostUSD != "":
		return bad(UnresolvedInline, "tool %q: %s", t.Name, validateInline(field.NewPath("spec", "tools").Key(t.Name), t).ToAggregate())
	case t.ClassName == "":
		return bad(UnresolvedInvalid, "tool %q: %s", t.Name, validateInline(field.NewPath("spec", "tools").Key(t.Name), t).ToAggregate())
	case c == nil:
		return bad(UnresolvedNoClass, "tool %q: ToolClass %q does not exist (a cluster admin creates it)", t.Name, t.ClassName)
	case len(c.Spec.Namespaces) > 0 && !slices.Contains(c.Spec.Namespaces, ns):
		return bad(UnresolvedNotAllowed, "tool %q: ToolClass %q does not admit namespace %q (its spec.namespaces: %s)",
			t.Name, c.Name, ns, strings.Join(c.Spec.Namespaces, ", "))
	case c.Spec.TimeoutSeconds > 0 && t.TimeoutSeconds > c.Spec.TimeoutSeconds:
		return bad(UnresolvedWider, "tool %q: timeoutSeconds %d exceeds ToolClass %q's %d", t.Name, t.TimeoutSeconds, c.Name, c.Spec.TimeoutSeconds)
	}
	params := c.Spec.Parameters
	if len(t.Parameters) > 0 {
		for _, p := range t.Parameters {
			if len(c.Spec.Parameters) > 0 && !slices.Contains(c.Spec.Parameters, p) {
				return bad(UnresolvedWider, "tool %q: parameter %q is not one of ToolClass %q's parameters (%s)",
					t.Name, p, c.Name, strings.Join(c.Spec.Parameters, ", "))
			}
		}
		params = t.Parameters
	}
	r := ResolvedTool{
		Name: t.Name, Usage: cmp.Or(t.Usage, c.Spec.Usage), ClassName: c.Name, Backend: *c.Spec.Backend.DeepCopy(),
		TimeoutSeconds: cmp.Or(t.TimeoutSeconds, c.Spec.TimeoutSeconds), CostUSD: c.Spec.CostUSD,
		Parameters:  slices.Clone(params),
		Attenuation: Narrowest(Narrowest(c.Spec.Attenuation, t.Attenuation), grantAtt),
	}
	for _, ref := range c.Spec.SecretRefs {
		ref.Namespace = cmp.Or(ref.Namespace, ns)
		r.SecretRefs = append(r.SecretRefs, ref)
	}
	if r.Attenuation != nil {
		for k, v := range r.Attenuation.PinnedParams {
			for _, x := range []*v1alpha1.Attenuation{c.Spec.Attenuation, t.Attenuation, grantAtt} {
				if x == nil {
					continue
				}
				if pv, ok := x.PinnedParams[k]; ok && pv != v {
					return bad(UnresolvedWider, "tool %q: parameter %q is pinned to %q by ToolClass %q and to %q by the grant",
						t.Name, k, v, c.Name, x.PinnedParams[k])
				}
			}
		}
	}
	return r, nil
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
// stay within their parent count), each resolved onto its class in classes
// (by name), sorted by name; the name conflicts; and the tools that do not
// resolve (they claim no name). Grants being deleted hold nothing.
func Effective(all []v1alpha1.Grant, classes map[string]*v1alpha1.ToolClass, agent string) ([]Tool, []Conflict, []Unresolved) {
	grants := held(all, agent)
	sort.SliceStable(grants, func(i, j int) bool { return older(grants[i], grants[j]) })
	owner := map[string]*Tool{}
	conflicts := map[string]*Conflict{}
	var out []Tool
	var unresolved []Unresolved
	for _, g := range grants {
		for i := range g.Spec.Tools {
			t := &g.Spec.Tools[i]
			rt, bad := Resolve(g.Namespace, t, g.Spec.Attenuation, classes[t.ClassName])
			if bad != nil {
				bad.Grant = g.Name
				unresolved = append(unresolved, *bad)
				continue
			}
			if kept, ok := owner[t.Name]; ok {
				c := conflicts[t.Name]
				if c == nil {
					c = &Conflict{Tool: t.Name, Kept: kept.Grant}
					conflicts[t.Name] = c
				}
				c.Losers = append(c.Losers, g.Name)
				continue
			}
			tool := Tool{ResolvedTool: rt, Grant: g.Name, Generation: g.Generation}
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
	return out, cs, unresolved
}

// ClassIndex indexes classes by name.
func ClassIndex(classes []v1alpha1.ToolClass) map[string]*v1alpha1.ToolClass {
	out := make(map[string]*v1alpha1.ToolClass, len(classes))
	for i := range classes {
		if classes[i].DeletionTimestamp == nil {
			out[classes[i].Name] = &classes[i]
		}
	}
	return out
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
// class, no parameter the parent does not allow, every parent pin kept with
// its value, a call cap and an expiry at least as tight, a timeout no longer.
// Otherwise the error says what is wider.
func Narrower(child, parent *v1alpha1.ToolGrant) error {
	if child.Name != parent.Name {
		return fmt.Errorf("tool %q is not the parent's tool %q", child.Name, parent.Name)
	}
	if child.ClassName != parent.ClassName || child.Backend != nil || len(child.SecretRefs) > 0 || child.CostUSD != "" {
		return fmt.Errorf("tool %q: its class differs from the parent's (%q)", child.Name, parent.ClassName)
	}
	if parent.TimeoutSeconds > 0 && (child.TimeoutSeconds == 0 || child.TimeoutSeconds > parent.TimeoutSeconds) {
		return fmt.Errorf("tool %q: timeoutSeconds %d exceeds the parent's %d", child.Name, child.TimeoutSeconds, parent.TimeoutSeconds)
	}
	if len(parent.Parameters) > 0 {
		if len(child.Parameters) == 0 {
			return fmt.Errorf("tool %q: the parent restricts its parameters to %s", child.Name, strings.Join(parent.Parameters, ", "))
		}
		for _, p := range child.Parameters {
			if !slices.Contains(parent.Parameters, p) {
				return fmt.Errorf("tool %q: parameter %q is not one of the parent's (%s)", child.Name, p, strings.Join(parent.Parameters, ", "))
			}
		}
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
