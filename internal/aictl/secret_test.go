package aictl

import (
	"strings"
	"testing"

	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/secrets"
	"aicli.dev/aicli/internal/secrets/secretapi"
)

// secretServer is the API with the secret endpoints over a store in a
// temporary directory.
func secretServer(t *testing.T) (*apiservertest.Server, secrets.Store) {
	t.Helper()
	srv := apiservertest.New(t)
	st := secrets.Store{Dir: t.TempDir()}
	secretapi.Mount(srv.API, st)
	return srv, st
}

func TestSecretSetListDelete(t *testing.T) {
	const planted = "sk-planted-0a1b2c3d4e5f"
	srv, st := secretServer(t)
	url := srv.ServeUnix(t)

	r := aictlIn(t, t.Context(), url, planted+"\n", "secret", "set", "api-key", "--from-stdin", "-n", "team-a")
	wantCode(t, r, 0)
	if r.out != "secret/api-key created\n" {
		t.Fatalf("set: %q", r.out)
	}
	if v, err := st.Get("team-a", "api-key"); err != nil || string(v) != planted {
		t.Fatalf("stored %q %v", v, err)
	}
	f := writeFile(t, t.TempDir(), "key", planted+"-2")
	r = aictl(t, url, "secret", "set", "api-key", "--from-file", f, "-n", "team-a")
	wantCode(t, r, 0)
	if r.out != "secret/api-key configured\n" {
		t.Fatalf("set again: %q", r.out)
	}

	// Never from an argument, and exactly one source.
	for _, args := range [][]string{
		{"secret", "set", "api-key", planted},
		{"secret", "set", "api-key"},
		{"secret", "set", "api-key", "--from-file", f, "--from-stdin"},
	} {
		r = aictl(t, url, args...)
		wantCode(t, r, 1)
		if strings.Contains(r.out+r.err, planted) {
			t.Fatalf("%v echoed the value: %+v", args, r)
		}
	}
	r = aictlIn(t, t.Context(), url, "\n", "secret", "set", "blank", "--from-stdin")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "empty") {
		t.Fatalf("empty value: %q", r.err)
	}

	r = aictl(t, url, "secret", "list", "-n", "team-a")
	wantCode(t, r, 0)
	rows := cells(r.out)
	if len(rows) != 2 || strings.Join(rows[0], ",") != "NAME,SIZE,AGE" || rows[1][0] != "api-key" || rows[1][1] != "25" {
		t.Fatalf("list:\n%s", r.out)
	}
	r = aictl(t, url, "secret", "list", "-n", "team-a", "-o", "json")
	wantCode(t, r, 0)
	if !strings.Contains(r.out, `"name": "api-key"`) || !strings.Contains(r.out, `"size": 25`) || strings.Contains(r.out, planted) {
		t.Fatalf("list -o json:\n%s", r.out)
	}

	r = aictl(t, url, "secret", "delete", "api-key", "-n", "team-a")
	wantCode(t, r, 0)
	if r.out != "secret \"api-key\" deleted\n" {
		t.Fatalf("delete: %q", r.out)
	}
	r = aictl(t, url, "secret", "delete", "api-key", "-n", "team-a")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "(NotFound)") {
		t.Fatalf("delete again: %q", r.err)
	}
	r = aictl(t, url, "secret", "list", "-n", "team-a")
	wantCode(t, r, 0)
	if r.out != "" || r.err != "No secrets found in team-a namespace.\n" {
		t.Fatalf("empty list: %+v", r)
	}
}

func TestSecretNamespaceIsAuthorised(t *testing.T) {
	srv, st := secretServer(t)
	url, caFile := srv.ServeTLSTokens(t, map[string]apiserver.Token{
		"team-a-token": {Name: "team-a-admin", Namespaces: []string{"team-a"}, Role: "admin"},
		"team-a-edit":  {Name: "team-a-edit", Namespaces: []string{"team-a"}, Role: "edit"},
	})
	auth := []string{"--certificate-authority=" + caFile, "--token", "team-a-token"}
	f := writeFile(t, t.TempDir(), "key", "v")
	wantCode(t, aictl(t, url, append(auth, "secret", "set", "k", "--from-file", f, "-n", "team-a")...), 0)
	edit := []string{"--certificate-authority=" + caFile, "--token", "team-a-edit"}
	if r := aictl(t, url, append(edit, "secret", "set", "k", "--from-file", f, "-n", "team-a")...); r.code == 0 ||
		!strings.Contains(r.err, "needs role admin") {
		t.Fatalf("an edit token set a secret: %+v", r)
	}
	for _, args := range [][]string{
		{"secret", "set", "k", "--from-file", f, "-n", "team-b"},
		{"secret", "list", "-n", "team-b"},
		{"secret", "delete", "k", "-n", "team-b"},
	} {
		r := aictl(t, url, append(auth, args...)...)
		wantCode(t, r, 1)
		if !strings.Contains(r.err, "(Forbidden)") {
			t.Fatalf("%v: %q", args, r.err)
		}
	}
	if _, err := st.Stat("team-b", "k"); err == nil {
		t.Fatal("a forbidden set stored a secret")
	}
}
