package apiserver_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"sigs.k8s.io/yaml"
)

// tenant is a server with one token per role over TLS, as `token create`
// writes them; "legacy" is an entry written before roles existed.
type tenant struct {
	t   *testing.T
	url string
	hc  *http.Client
}

func newTenant(t *testing.T) *tenant {
	t.Helper()
	srv := apiservertest.New(t)
	url, caFile := srv.ServeTLSTokens(t, map[string]apiserver.Token{
		"view-tok":    {Name: "viewer", Namespaces: []string{"team-a"}, Role: "view"},
		"edit-tok":    {Name: "editor", Namespaces: []string{"team-a"}, Role: "edit"},
		"admin-tok":   {Name: "ns-admin", Namespaces: []string{"team-a"}, Role: "admin"},
		"legacy-tok":  {Name: "legacy", Namespaces: []string{"team-a"}},
		"all-edit":    {Name: "all-editor", Namespaces: []string{"*"}, Role: "edit"},
		"cluster-tok": {Name: "root", Namespaces: []string{"*"}, Role: "cluster-admin"},
	})
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &tenant{t: t, url: url, hc: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
}

func (e *tenant) do(token, method, path, body string) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	} else if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.ReplaceAll(string(raw), `\"`, `"`) // Status messages read as written
}

const (
	teamA   = apischema.APIPath + "/namespaces/team-a"
	classes = apischema.APIPath + "/toolclasses"
)

const shellClass = `{"apiVersion":"aicli.dev/v1alpha1","kind":"ToolClass","metadata":{"name":"sh"},` +
	`"spec":{"backend":{"exec":{"command":"/bin/sh","args":["-c","cat /secrets/*"]}}}}`

// TestRolesAllowTheirVerbs: each role may do what it names and no more; a
// refusal is 403 naming the verb, the resource and the role it needs.
func TestRolesAllowTheirVerbs(t *testing.T) {
	e := newTenant(t)
	if code, body := e.do("cluster-tok", "POST", teamA+"/agents", agentJSON("seed", "")); code != 201 {
		t.Fatalf("seed: %d %s", code, body)
	}
	for _, tc := range []struct {
		token, method, path, body string
		code                      int
		says                      string
	}{
		{"view-tok", "GET", teamA + "/agents/seed", "", 200, ""},
		{"view-tok", "POST", teamA + "/agents", agentJSON("v", ""), 403, `may not create agents in namespace "team-a": that needs role edit`},
		{"view-tok", "PATCH", teamA + "/agents/seed", `{"spec":{"model":"m"}}`, 403, "may not patch agents"},
		{"view-tok", "POST", teamA + "/conversations/c/send", `{"text":"x"}`, 403, "may not create conversations/send"},
		{"view-tok", "GET", teamA + "/agents/seed/history", "", 200, ""},
		{"edit-tok", "POST", teamA + "/agents", agentJSON("e", ""), 201, ""},
		{"edit-tok", "PATCH", teamA + "/agents/e", `{"spec":{"model":"m"}}`, 200, ""},
		{"edit-tok", "PUT", teamA + "/agents/e/status", agentJSON("e", ""), 403, "may not update agents/status"},
		{"edit-tok", "DELETE", teamA + "/agents/e", "", 200, ""},
		{"legacy-tok", "POST", teamA + "/agents", agentJSON("l", ""), 201, ""},
		{"legacy-tok", "GET", apischema.APIPath + "/agents", "", 403, "across all namespaces"},
		{"edit-tok", "GET", apischema.APIPath + "/namespaces/team-b/agents", "", 403, `may not touch namespace "team-b"`},
		{"all-edit", "GET", apischema.APIPath + "/agents", "", 200, ""},
		{"cluster-tok", "PUT", teamA + "/agents/seed/status", agentJSON("seed", ""), 200, ""},
	} {
		code, body := e.do(tc.token, tc.method, tc.path, tc.body)
		if code != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("%s %s %s: %d %s; want %d saying %q", tc.token, tc.method, tc.path, code, body, tc.code, tc.says)
		}
	}
}

// TestOnlyClusterAdminsWriteWhatRunsOnTheHost: a namespace-bound token — any
// role, even over all namespaces — cannot create a ToolClass nor put a host
// command in a Grant; it may read the classes and reference one. Before
// ToolClasses, an edit token's Grant with backend.exec ran any command on the
// host.
func TestOnlyClusterAdminsWriteWhatRunsOnTheHost(t *testing.T) {
	e := newTenant(t)
	for _, tok := range []string{"edit-tok", "admin-tok", "legacy-tok", "all-edit"} {
		code, body := e.do(tok, "POST", classes, shellClass)
		if code != 403 || !strings.Contains(body, "cluster-scoped kinds are written by cluster admins only") {
			t.Errorf("%s created a ToolClass: %d %s", tok, code, body)
		}
	}
	inline := `{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"g"},"spec":{"subject":"a","tools":[` +
		`{"name":"sh","backend":{"exec":{"command":"/bin/sh","args":["-c","cat /secrets/*"]}}}]}}`
	code, body := e.do("edit-tok", "POST", teamA+"/grants", inline)
	if code != 422 || !strings.Contains(body, "spec.tools[0].backend") || !strings.Contains(body, "kind: ToolClass") {
		t.Fatalf("a Grant with a host command: %d %s", code, body)
	}

	if code, body := e.do("cluster-tok", "POST", classes, shellClass); code != 201 {
		t.Fatalf("cluster admin: %d %s", code, body)
	}
	if code, body := e.do("view-tok", "GET", classes+"/sh", ""); code != 200 || !strings.Contains(body, "/bin/sh") {
		t.Fatalf("read a class: %d %s", code, body)
	}
	if code, body := e.do("edit-tok", "DELETE", classes+"/sh", ""); code != 403 {
		t.Fatalf("a tenant deleted a class: %d %s", code, body)
	}
	ref := `{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"g"},"spec":{"subject":"a","tools":[` +
		`{"name":"sh","className":"sh"}]}}`
	if code, body := e.do("edit-tok", "POST", teamA+"/grants", ref); code != 201 {
		t.Fatalf("a Grant referencing the class: %d %s", code, body)
	}
	if code, body := e.do("cluster-tok", "GET", apischema.APIPath+"/namespaces/team-a/toolclasses/sh", ""); code != 400 ||
		!strings.Contains(body, "cluster-scoped") {
		t.Fatalf("a cluster-scoped kind under a namespace: %d %s", code, body)
	}
}

// TestGrantMayOnlyNarrowItsClass: a Grant asking for more than its class
// gives, or a class that does not admit its namespace, is refused naming the tool.
func TestGrantMayOnlyNarrowItsClass(t *testing.T) {
	e := newTenant(t)
	class := `{"apiVersion":"aicli.dev/v1alpha1","kind":"ToolClass","metadata":{"name":"gh"},"spec":{"timeoutSeconds":10,` +
		`"parameters":["repo"],"namespaces":["team-a"],"backend":{"exec":{"command":"/usr/bin/gh"}}}}`
	if code, body := e.do("cluster-tok", "POST", classes, class); code != 201 {
		t.Fatalf("class: %d %s", code, body)
	}
	grant := func(tool string) string {
		return `{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"g"},"spec":{"subject":"a","tools":[` + tool + `]}}`
	}
	for _, tc := range []struct{ ns, tool, says string }{
		{"team-a", `{"name":"gh","className":"gh","timeoutSeconds":60}`, "timeoutSeconds 60 exceeds"},
		{"team-a", `{"name":"gh","className":"gh","parameters":["token"]}`, `parameter "token" is not one of`},
		{"team-b", `{"name":"gh","className":"gh"}`, `does not admit namespace "team-b"`},
	} {
		code, body := e.do("cluster-tok", "POST", apischema.APIPath+"/namespaces/"+tc.ns+"/grants", grant(tc.tool))
		if code != 422 || !strings.Contains(body, "spec.tools[0]") || !strings.Contains(body, tc.says) {
			t.Errorf("%s %s: %d %s; want 422 saying %q", tc.ns, tc.tool, code, body, tc.says)
		}
	}
	if code, body := e.do("edit-tok", "POST", teamA+"/grants", grant(`{"name":"gh","className":"gh","timeoutSeconds":5}`)); code != 201 {
		t.Fatalf("a narrower grant: %d %s", code, body)
	}
}

// TestTokenRoles: a token file entry's role must be a known one, and
// cluster-admin spans every namespace.
func TestTokenRoles(t *testing.T) {
	for _, tc := range []struct {
		tok  apiserver.Token
		want string
	}{
		{apiserver.Token{Namespaces: []string{"a"}, Role: "owner"}, `role "owner" is not one of`},
		{apiserver.Token{Namespaces: []string{"a"}, Role: "cluster-admin"}, "must be [\"*\"]"},
		{apiserver.Token{Namespaces: []string{"a"}, Role: "view"}, ""},
		{apiserver.Token{Namespaces: []string{"*"}, Role: "cluster-admin"}, ""},
	} {
		err := tc.tok.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.tok, err, tc.want)
		}
	}
	if p := (&apiserver.Token{Name: "old", Namespaces: []string{"a"}}).Principal(); p.Role != apiserver.RoleEdit || p.IsClusterAdmin() {
		t.Fatalf("a token without a role: %+v", p)
	}
}

// TestRBACManifestMatchesTheRoles: config/rbac/roles.yaml, the roles as
// Kubernetes ClusterRoles, grants each role exactly what the supervisor checks.
func TestRBACManifestMatchesTheRoles(t *testing.T) {
	data, err := os.ReadFile("../../config/rbac/roles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type clusterRole struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Rules []struct {
			APIGroups []string `json:"apiGroups"`
			Resources []string `json:"resources"`
			Verbs     []string `json:"verbs"`
		} `json:"rules"`
	}
	own := map[string]map[string]bool{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var cr clusterRole
		if err := yaml.Unmarshal([]byte(doc), &cr); err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		for _, r := range cr.Rules {
			if len(r.APIGroups) != 1 || r.APIGroups[0] != "aicli.dev" {
				t.Fatalf("%s: apiGroups %v", cr.Metadata.Name, r.APIGroups)
			}
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					set[v+" "+res] = true
				}
			}
		}
		own[cr.Metadata.Name] = set
	}
	seen := map[string]bool{}
	for _, role := range apiserver.NamespacedRoles {
		want := map[string]bool{}
		for _, r := range apiserver.RulesOf(role) {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					want[v+" "+res] = true
				}
			}
		}
		// A role's manifest holds its own rules; aggregation adds the lesser roles'.
		got := map[string]bool{}
		for _, lesser := range apiserver.NamespacedRoles {
			for k := range own["aicli-"+string(lesser)] {
				got[k] = true
			}
			if lesser == role {
				break
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("role %s: manifest allows %v, the supervisor %v", role, keys(got), keys(want))
		}
		seen["aicli-"+string(role)] = true
	}
	for name := range own {
		if !seen[name] {
			t.Errorf("manifest has %s, which is no role", name)
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
