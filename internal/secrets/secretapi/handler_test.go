package secretapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/secrets"
	"aicli.dev/aicli/internal/secrets/secretapi"
	"aicli.dev/aicli/internal/secrets/secretwire"
)

// planted is a value no response may ever contain.
const planted = "sk-planted-9f8e7d6c5b4a"

type env struct {
	t      *testing.T
	url    string
	st     secrets.Store
	bodies []string
}

// serve mounts the handlers on the real API server, authenticated as p.
func serve(t *testing.T, p *apiserver.Principal) *env {
	srv := apiservertest.New(t)
	st := secrets.Store{Dir: t.TempDir()}
	secretapi.Mount(srv.API, st)
	return &env{t: t, url: srv.ServeLoopback(t, p), st: st}
}

func (e *env) do(method, path string, body []byte, wantCode int) []byte {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+apischema.APIPath+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", secretwire.ContentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	e.bodies = append(e.bodies, string(data))
	if resp.StatusCode != wantCode {
		e.t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, wantCode, data)
	}
	return data
}

// noValueAnywhere asserts that no response body held the planted value.
func (e *env) noValueAnywhere() {
	e.t.Helper()
	for _, b := range e.bodies {
		if strings.Contains(b, planted) {
			e.t.Fatalf("a response holds the secret value: %s", b)
		}
	}
}

// TestSecretsNeedTheAdminRole: edit and view tokens of the namespace may not
// set, list or delete its secrets; admin may.
func TestSecretsNeedTheAdminRole(t *testing.T) {
	for _, role := range []apiserver.Role{apiserver.RoleView, apiserver.RoleEdit} {
		e := serve(t, &apiserver.Principal{Name: "team-a", Namespaces: []string{"team-a"}, Role: role})
		body := e.do(http.MethodPut, "/namespaces/team-a/secrets/api-key", []byte(planted), http.StatusForbidden)
		if !strings.Contains(string(body), "needs role admin") {
			t.Fatalf("%s: refusal %s does not name the role", role, body)
		}
		e.do(http.MethodGet, "/namespaces/team-a/secrets", nil, http.StatusForbidden)
		if _, err := e.st.Get("team-a", "api-key"); err == nil {
			t.Fatalf("%s: the secret was stored", role)
		}
	}
}

func TestSetListDeleteNeverReturnValues(t *testing.T) {
	e := serve(t, &apiserver.Principal{Name: "team-a", Namespaces: []string{"team-a"}, Role: apiserver.RoleAdmin})
	var s secretwire.Secret
	if err := json.Unmarshal(e.do(http.MethodPut, "/namespaces/team-a/secrets/api-key", []byte(planted), http.StatusCreated), &s); err != nil ||
		s.Name != "api-key" || s.Size != int64(len(planted)) || s.Modified.IsZero() {
		t.Fatalf("PUT reply %+v %v", s, err)
	}
	e.do(http.MethodPut, "/namespaces/team-a/secrets/api-key", []byte(planted+"2"), http.StatusOK)
	if v, err := e.st.Get("team-a", "api-key"); err != nil || string(v) != planted+"2" {
		t.Fatalf("stored %q %v", v, err)
	}
	e.do(http.MethodPut, "/namespaces/team-a/secrets/other", []byte(planted), http.StatusCreated)

	var list secretwire.List
	if err := json.Unmarshal(e.do(http.MethodGet, "/namespaces/team-a/secrets", nil, http.StatusOK), &list); err != nil ||
		len(list.Items) != 2 || list.Items[0].Name != "api-key" || list.Items[0].Size != int64(len(planted))+1 || list.Items[1].Name != "other" {
		t.Fatalf("list %+v %v", list, err)
	}
	// A value is never read back: GET on a secret is not a method it has.
	e.do(http.MethodGet, "/namespaces/team-a/secrets/api-key", nil, http.StatusMethodNotAllowed)
	e.do(http.MethodPost, "/namespaces/team-a/secrets", []byte(planted), http.StatusMethodNotAllowed)

	e.do(http.MethodDelete, "/namespaces/team-a/secrets/api-key", nil, http.StatusOK)
	e.do(http.MethodDelete, "/namespaces/team-a/secrets/api-key", nil, http.StatusNotFound)
	if err := json.Unmarshal(e.do(http.MethodGet, "/namespaces/team-a/secrets", nil, http.StatusOK), &list); err != nil ||
		len(list.Items) != 1 || list.Items[0].Name != "other" {
		t.Fatalf("list after delete %+v %v", list, err)
	}
	e.do(http.MethodGet, "/namespaces/team-b/secrets", nil, http.StatusForbidden)
	e.noValueAnywhere()
}

func TestCallerMustBeAllowedInTheNamespace(t *testing.T) {
	e := serve(t, &apiserver.Principal{Name: "team-a", Namespaces: []string{"team-a"}, Role: apiserver.RoleAdmin})
	if err := e.st.Set("team-b", "theirs", []byte(planted)); err != nil {
		t.Fatal(err)
	}
	e.do(http.MethodPut, "/namespaces/team-b/secrets/mine", []byte(planted), http.StatusForbidden)
	e.do(http.MethodGet, "/namespaces/team-b/secrets", nil, http.StatusForbidden)
	e.do(http.MethodDelete, "/namespaces/team-b/secrets/theirs", nil, http.StatusForbidden)
	if _, err := e.st.Stat("team-b", "mine"); err == nil {
		t.Fatal("a forbidden PUT stored a secret")
	}
	if _, err := e.st.Stat("team-b", "theirs"); err != nil {
		t.Fatalf("a forbidden DELETE removed a secret: %v", err)
	}
	e.noValueAnywhere()
}

func TestSizeEmptyAndBadNames(t *testing.T) {
	e := serve(t, apiserver.LocalAdmin)
	e.do(http.MethodPut, "/namespaces/ns/secrets/big", bytes.Repeat([]byte("x"), secretwire.MaxValueBytes+1), http.StatusRequestEntityTooLarge)
	e.do(http.MethodPut, "/namespaces/ns/secrets/big", bytes.Repeat([]byte("x"), secretwire.MaxValueBytes), http.StatusCreated)
	e.do(http.MethodPut, "/namespaces/ns/secrets/empty", nil, http.StatusBadRequest)
	e.do(http.MethodPut, "/namespaces/ns/secrets/Bad_Name", []byte(planted), http.StatusBadRequest)
	e.do(http.MethodPut, "/namespaces/NS/secrets/x", []byte(planted), http.StatusBadRequest)
	if _, err := e.st.Stat("ns", "empty"); err == nil {
		t.Fatal("an empty value was stored")
	}
	e.noValueAnywhere()
}
