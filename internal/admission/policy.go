package admission

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
)

// allowance is the union of the NamespacePolicies that apply to one namespace.
type allowance struct {
	namespace                                       string
	images, endpoints, egress, supervisors, sources []string
}

// bounded returns the allowance a write in namespace ns is held to, or nil
// when the writer is not bound by policy (a cluster admin, or a write that
// did not come through the API).
func bounded(ctx context.Context, st Lister, ns string) (*allowance, error) {
	p, ok := apiserver.PrincipalFrom(ctx)
	if !ok || p.IsClusterAdmin() {
		return nil, nil
	}
	list, err := st.List(ctx, "namespacepolicies", "", nil)
	if err != nil {
		return nil, err
	}
	a := &allowance{namespace: ns}
	for _, item := range list.Items {
		var pol v1alpha1.NamespacePolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &pol); err != nil {
			return nil, fmt.Errorf("decoding NamespacePolicy %s: %w", item.GetName(), err)
		}
		if len(pol.Spec.Namespaces) > 0 && !slices.Contains(pol.Spec.Namespaces, ns) {
			continue
		}
		a.sources = append(a.sources, pol.Name)
		a.images = append(a.images, pol.Spec.Images...)
		a.endpoints = append(a.endpoints, pol.Spec.ProviderEndpoints...)
		a.egress = append(a.egress, pol.Spec.EgressDomains...)
		a.supervisors = append(a.supervisors, pol.Spec.RemoteSupervisors...)
	}
	return a, nil
}

// refuse is the Forbidden error on path for value, saying what the policies allow.
func (a *allowance) refuse(path *field.Path, value, what string, allowed []string) *field.Error {
	by := "no NamespacePolicy applies to namespace " + a.namespace
	if len(a.sources) > 0 {
		by = fmt.Sprintf("the NamespacePolicies of namespace %s (%s) allow %s", a.namespace, strings.Join(a.sources, ", "), orNothing(allowed))
	}
	return field.Forbidden(path, fmt.Sprintf("%q is not an allowed %s: %s; a cluster admin extends a NamespacePolicy (docs/security.md#namespace-policy)",
		value, what, by))
}

func orNothing(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// image reports whether ref matches an allowed image: exact, or a prefix
// ending in "*".
func (a *allowance) image(ref string) bool {
	return slices.ContainsFunc(a.images, func(p string) bool {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			return strings.HasPrefix(ref, prefix)
		}
		return p == ref
	})
}

// urlAllowed reports whether raw has the scheme, host and port of an entry of
// allowed and a path under the entry's.
func urlAllowed(raw string, allowed []string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || u.Host == "" {
		return false
	}
	return slices.ContainsFunc(allowed, func(e string) bool {
		p, err := url.Parse(e)
		if err != nil || p.Host == "" {
			return false
		}
		if !strings.EqualFold(u.Scheme, p.Scheme) || !strings.EqualFold(hostPort(u), hostPort(p)) {
			return false
		}
		prefix := strings.TrimSuffix(p.Path, "/")
		return u.Path == prefix || strings.HasPrefix(u.Path, prefix+"/") || prefix == ""
	})
}

// hostPort is u's host with the scheme's default port made explicit.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return u.Hostname() + ":443"
	}
	return u.Hostname() + ":80"
}

// domain reports whether an egress allow-list entry d (exact, or "*.x") is
// covered by an allowed domain: the same entry, or a "*.y" with d equal to a
// subdomain of y (or d itself a wildcard under y).
func (a *allowance) domain(d string) bool {
	return slices.ContainsFunc(a.egress, func(p string) bool {
		if p == d {
			return true
		}
		suffix, ok := strings.CutPrefix(p, "*.")
		if !ok {
			return false
		}
		return strings.HasSuffix(strings.TrimPrefix(d, "*."), "."+suffix)
	})
}

// added returns the entries of now that were not in before.
func added(now, before []string) []int {
	var out []int
	for i, v := range now {
		if !slices.Contains(before, v) {
			out = append(out, i)
		}
	}
	return out
}

// agentPolicy checks what an Agent write sets anew against the allowance:
// spec.image, spec.provider.endpoint, spec.egress.allow. Values an old object
// already had (a cluster admin's exception) stay.
func agentPolicy(a *allowance, obj, old *v1alpha1.Agent) field.ErrorList {
	if a == nil {
		return nil
	}
	if old == nil {
		old = &v1alpha1.Agent{}
	}
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if img := obj.Spec.Image; img != "" && img != old.Spec.Image && !a.image(img) {
		errs = append(errs, a.refuse(spec.Child("image"), img, "guest image", a.images))
	}
	if ep := obj.Spec.Provider.Endpoint; ep != "" && ep != old.Spec.Provider.Endpoint && !urlAllowed(ep, a.endpoints) {
		errs = append(errs, a.refuse(spec.Child("provider", "endpoint"), ep, "provider endpoint", a.endpoints))
	}
	if obj.Spec.Egress != nil {
		var before []string
		if old.Spec.Egress != nil {
			before = old.Spec.Egress.Allow
		}
		for _, i := range added(obj.Spec.Egress.Allow, before) {
			if d := obj.Spec.Egress.Allow[i]; !a.domain(d) {
				errs = append(errs, a.refuse(spec.Child("egress", "allow").Index(i), d, "egress domain", a.egress))
			}
		}
	}
	return errs
}

// monitorPolicy checks a MonitorAttachment's remote supervisor address.
func monitorPolicy(a *allowance, obj, old *v1alpha1.MonitorAttachment) field.ErrorList {
	if a == nil || obj.Spec.Target.Supervisor == nil {
		return nil
	}
	addr := obj.Spec.Target.Supervisor.Address
	if old != nil && old.Spec.Target.Supervisor != nil && old.Spec.Target.Supervisor.Address == addr {
		return nil
	}
	if urlAllowed(addr, a.supervisors) {
		return nil
	}
	return field.ErrorList{a.refuse(field.NewPath("spec", "target", "supervisor", "address"), addr, "remote supervisor", a.supervisors)}
}

// decodeOld decodes the object before an update (nil on create).
func decodeOld[T any](old *unstructured.Unstructured) (*T, error) {
	if old == nil {
		return nil, nil
	}
	var t T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(old.Object, &t); err != nil {
		return nil, err
	}
	return &t, nil
}
