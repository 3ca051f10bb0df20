package admission_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
)

// policyEnv serves one API as a team-a tenant and as the cluster admin.
type policyEnv struct {
	t             *testing.T
	tenant, admin string
}

func newPolicyEnv(t *testing.T) *policyEnv {
	srv := apiservertest.New(t)
	return &policyEnv{t: t,
		tenant: srv.ServeLoopback(t, &apiserver.Principal{Name: "team-a", Namespaces: []string{"team-a"}, Role: apiserver.RoleEdit}),
		admin:  srv.ServeLoopback(t, apiserver.LocalAdmin)}
}

func (e *policyEnv) do(base, method, path, body string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest(method, base+apischema.APIPath+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.ReplaceAll(string(data), `\"`, `"`)
}

func agentSpec(name, spec string) string {
	return `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"` + name + `"},"spec":{"harness":"fake"` + spec + `}}`
}

// TestTenantsStayWithinTheirNamespacePolicy: a namespace-bound writer may only
// name the images, provider endpoints, egress domains and remote supervisors
// a NamespacePolicy of its namespace allows (none without one); the refusal
// names the field. A cluster admin is not bound, and what it set stays when a
// tenant edits something else. Before NamespacePolicy, a tenant could point
// the supervisor at any host-local address or image.
func TestTenantsStayWithinTheirNamespacePolicy(t *testing.T) {
	e := newPolicyEnv(t)
	const ns = "/namespaces/team-a/agents"
	for _, tc := range []struct{ spec, field string }{
		{`,"image":"evil/tool:latest"`, "spec.image"},
		{`,"provider":{"endpoint":"http://127.0.0.1:2375/"}`, "spec.provider.endpoint"},
		{`,"egress":{"allow":["localhost"]}`, "spec.egress.allow[0]"},
	} {
		code, body := e.do(e.tenant, "POST", ns, agentSpec("a", tc.spec))
		if code != 422 || !strings.Contains(body, tc.field) || !strings.Contains(body, "no NamespacePolicy applies to namespace team-a") {
			t.Errorf("no policy, %s: %d %s", tc.spec, code, body)
		}
	}
	remote := `{"apiVersion":"aicli.dev/v1alpha1","kind":"MonitorAttachment","metadata":{"name":"m"},"spec":{"monitor":"w",` +
		`"target":{"agent":"t","supervisor":{"address":"https://169.254.169.254:443","tokenSecret":"tok"}},"trigger":{"keywords":[{"text":"x"}]}}}`
	if code, body := e.do(e.tenant, "POST", "/namespaces/team-a/monitorattachments", remote); code != 422 ||
		!strings.Contains(body, "spec.target.supervisor.address") {
		t.Errorf("remote supervisor without a policy: %d %s", code, body)
	}

	policy := `{"apiVersion":"aicli.dev/v1alpha1","kind":"NamespacePolicy","metadata":{"name":"team-a"},"spec":{"namespaces":["team-a"],` +
		`"images":["team-a/*"],"providerEndpoints":["https://api.example.com/v1"],"egressDomains":["*.github.com","pypi.org"]}}`
	if code, body := e.do(e.tenant, "POST", "/namespacepolicies", policy); code != 403 {
		t.Fatalf("a tenant wrote a NamespacePolicy: %d %s", code, body)
	}
	if code, body := e.do(e.admin, "POST", "/namespacepolicies", policy); code != 201 {
		t.Fatalf("policy: %d %s", code, body)
	}
	for _, tc := range []struct {
		spec  string
		field string
	}{
		{`,"image":"team-a/coder:1"`, ""},
		{`,"image":"team-ab/coder:1"`, "spec.image"},
		{`,"provider":{"endpoint":"https://api.example.com/v1/messages"}`, ""},
		{`,"provider":{"endpoint":"https://api.example.com.evil.io/v1"}`, "spec.provider.endpoint"},
		{`,"provider":{"endpoint":"https://api.example.com:8443/v1"}`, "spec.provider.endpoint"},
		{`,"provider":{"endpoint":"https://api.example.com/v10"}`, "spec.provider.endpoint"},
		{`,"egress":{"allow":["api.github.com","*.raw.github.com","pypi.org"]}`, ""},
		{`,"egress":{"allow":["github.com"]}`, "spec.egress.allow[0]"},
		{`,"egress":{"allow":["pypi.org","evilgithub.com"]}`, "spec.egress.allow[1]"},
	} {
		code, body := e.do(e.tenant, "POST", ns, agentSpec("b", tc.spec))
		switch {
		case tc.field == "" && code != 201:
			t.Errorf("allowed %s: %d %s", tc.spec, code, body)
		case tc.field != "" && (code != 422 || !strings.Contains(body, tc.field) || !strings.Contains(body, "(team-a) allow")):
			t.Errorf("refused %s: %d %s", tc.spec, code, body)
		}
		if code == 201 {
			e.do(e.admin, "DELETE", ns+"/b", "")
		}
	}

	// A cluster admin's exception is not bound, and survives a tenant's edit of another field.
	if code, body := e.do(e.admin, "POST", ns, agentSpec("x", `,"image":"special:1","egress":{"allow":["internal.example"]}`)); code != 201 {
		t.Fatalf("cluster admin: %d %s", code, body)
	}
	if code, body := e.do(e.tenant, "PATCH", ns+"/x", `{"spec":{"model":"m"}}`); code != 200 {
		t.Fatalf("tenant edit keeping the admin's values: %d %s", code, body)
	}
	if code, body := e.do(e.tenant, "PATCH", ns+"/x", `{"spec":{"egress":{"allow":["internal.example","other.example"]}}}`); code != 422 ||
		!strings.Contains(body, "spec.egress.allow[1]") {
		t.Fatalf("tenant adding a domain: %d %s", code, body)
	}
}
