package apiserver

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Role is what a principal may do in its namespaces, named and shaped after
// Kubernetes' aggregated cluster roles (view ⊂ edit ⊂ admin) plus the
// all-powerful cluster-admin (docs/security.md#roles).
type Role string

// Roles.
const (
	// RoleClusterAdmin may do anything, in every namespace and on the
	// cluster-scoped kinds (ToolClass, NamespacePolicy) that decide what runs
	// on the host. The unix socket's owner is one.
	RoleClusterAdmin Role = "cluster-admin"
	// RoleAdmin is RoleEdit plus the namespace's supervisor-held Secrets.
	RoleAdmin Role = "admin"
	// RoleEdit writes Agents, Conversations, Grants and MonitorAttachments and
	// uses their subresources (send, attach, start, mail, rearm, recall).
	RoleEdit Role = "edit"
	// RoleView reads: objects, transcripts, screens, history, inboxes, spend.
	RoleView Role = "view"
)

// NamespacedRoles are the roles a namespace-bound token may hold, least first.
var NamespacedRoles = []Role{RoleView, RoleEdit, RoleAdmin}

// ParseRole returns the role named s ("" is RoleEdit: tokens written before
// roles existed keep the rights they had).
func ParseRole(s string) (Role, error) {
	if s == "" {
		return RoleEdit, nil
	}
	r := Role(s)
	if r == RoleClusterAdmin || slices.Contains(NamespacedRoles, r) {
		return r, nil
	}
	return "", fmt.Errorf("role %q is not one of view, edit, admin, cluster-admin", s)
}

// Verbs of the API, as Kubernetes names them.
const (
	VerbGet    = "get"
	VerbList   = "list"
	VerbWatch  = "watch"
	VerbCreate = "create"
	VerbUpdate = "update"
	VerbPatch  = "patch"
	VerbDelete = "delete"
)

// PolicyRule allows Verbs on Resources: a plural ("agents"), a subresource
// ("conversations/send") or an extra endpoint ("secrets", "spendhistory").
type PolicyRule struct {
	Verbs     []string
	Resources []string
}

var (
	readVerbs  = []string{VerbGet, VerbList, VerbWatch}
	writeVerbs = []string{VerbCreate, VerbUpdate, VerbPatch, VerbDelete}
	// userKinds are the namespaced kinds users write.
	userKinds = []string{"agents", "conversations", "grants", "monitorattachments"}
)

// roleRules are each namespaced role's own rules; a role also holds the rules
// of every lesser role (RulesOf). config/rbac holds the same rules as
// Kubernetes ClusterRoles (a test keeps them equal).
var roleRules = map[Role][]PolicyRule{
	RoleView: {
		{Verbs: readVerbs, Resources: append(slices.Clone(userKinds), "toolclasses", "namespacepolicies")},
		{Verbs: []string{VerbGet}, Resources: []string{
			"agents/status", "conversations/status", "grants/status", "monitorattachments/status",
			"agents/history", "conversations/history", "grants/history", "monitorattachments/history",
			"conversations/transcript", "conversations/screen", "conversations/toolcalls",
			"agents/historysearch", "agents/inbox", "agents/budget", "agents/recallbuckets",
			"spendhistory", "info", // info is served to every caller, filtered to its namespaces
		}},
	},
	RoleEdit: {
		{Verbs: writeVerbs, Resources: userKinds},
		{Verbs: []string{VerbCreate}, Resources: []string{
			"conversations/send", "conversations/attach", "agents/start", "agents/mail", "agents/inbox",
			"agents/budget", "monitorattachments/rearm",
		}},
		{Verbs: writeVerbs, Resources: []string{"agents/recallbuckets"}},
	},
	RoleAdmin: {
		{Verbs: append(slices.Clone(readVerbs), writeVerbs...), Resources: []string{"secrets"}},
	},
}

// RulesOf returns every rule role holds (its own and its lesser roles').
func RulesOf(role Role) []PolicyRule {
	var out []PolicyRule
	for _, r := range NamespacedRoles {
		out = append(out, roleRules[r]...)
		if r == role {
			return out
		}
	}
	return nil
}

func allows(role Role, verb, resource string) bool {
	if role == RoleClusterAdmin {
		return true
	}
	for _, rule := range RulesOf(role) {
		if slices.Contains(rule.Verbs, verb) && slices.Contains(rule.Resources, resource) {
			return true
		}
	}
	return false
}

// leastRole names the least role that allows verb on resource.
func leastRole(verb, resource string) Role {
	for _, r := range NamespacedRoles {
		if allows(r, verb, resource) {
			return r
		}
	}
	return RoleClusterAdmin
}

// Attributes are what one request does, as Kubernetes RBAC sees it.
type Attributes struct {
	// Verb is get, list, watch, create, update, patch or delete.
	Verb string
	// Namespace is the request's namespace; "" for a cluster-scoped kind or a
	// request across every namespace.
	Namespace string
	// Resource is the plural, or an extra endpoint's name.
	Resource string
	// Subresource is the subresource, if any ("send", "status").
	Subresource string
	// Name is the object's name, if any.
	Name string
	// ClusterScoped is true for a cluster-scoped kind.
	ClusterScoped bool
}

func (a Attributes) resource() string {
	if a.Subresource == "" {
		return a.Resource
	}
	return a.Resource + "/" + a.Subresource
}

// Authorize returns nil when p may do a, else a Forbidden Status that names the
// missing verb, resource and role.
func Authorize(p *Principal, a Attributes) error {
	res := a.resource()
	gr := schema.GroupResource{Group: "aicli.dev", Resource: res}
	if p.IsClusterAdmin() {
		return nil
	}
	switch {
	case a.ClusterScoped && slices.Contains(readVerbs, a.Verb):
		// Every principal may read the classes and policies that bound it.
	case a.ClusterScoped:
		return apierrors.NewForbidden(gr, a.Name, fmt.Errorf("%s may not %s %s: cluster-scoped kinds are written by cluster admins only",
			p.describe(), a.Verb, res))
	case a.Namespace == "" && !p.AllNamespaces():
		return apierrors.NewForbidden(gr, a.Name, fmt.Errorf("%s may not %s %s across all namespaces", p.describe(), a.Verb, res))
	case a.Namespace != "" && !p.Allowed(a.Namespace):
		return apierrors.NewForbidden(gr, a.Name, fmt.Errorf("%s may not touch namespace %q", p.describe(), a.Namespace))
	}
	if allows(p.role(), a.Verb, res) {
		return nil
	}
	where := fmt.Sprintf("in namespace %q", a.Namespace)
	if a.Namespace == "" {
		where = "across all namespaces"
	}
	return apierrors.NewForbidden(gr, a.Name, fmt.Errorf("%s may not %s %s %s: that needs role %s",
		p.describe(), a.Verb, res, where, leastRole(a.Verb, res)))
}

// VerbOf returns the verb of an HTTP request on an object or subresource: a
// websocket is create (it carries input both ways, like pods/exec).
func VerbOf(r *http.Request) string {
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return VerbCreate
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return VerbGet
	case http.MethodPost:
		return VerbCreate
	case http.MethodPut:
		return VerbUpdate
	case http.MethodPatch:
		return VerbPatch
	case http.MethodDelete:
		return VerbDelete
	}
	return strings.ToLower(r.Method)
}

// Authorized wraps an extra endpoint served outside the kinds' routes
// (Server.Handle): the caller must be allowed the request's verb on resource
// in the {namespace} of the path (all namespaces when the pattern has none).
func Authorized(resource string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := PrincipalFrom(r.Context())
		if !ok {
			writeError(w, apierrors.NewUnauthorized("unauthenticated request"))
			return
		}
		res, sub, _ := strings.Cut(resource, "/")
		a := Attributes{Verb: VerbOf(r), Namespace: r.PathValue("namespace"), Resource: res, Subresource: sub}
		if err := Authorize(p, a); err != nil {
			writeError(w, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}
