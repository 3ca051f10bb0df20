package aictl

import (
	"encoding/json"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/recall/recallapi/recallapitest"
	"aicli.dev/aicli/internal/recall/recallwire"
)

// bucketServer is the API with the recall endpoints (real store and
// indexes) and agent default/coder.
func bucketServer(t *testing.T) string {
	t.Helper()
	srv := apiservertest.New(t)
	recallapitest.Mount(t, srv, "default/coder")
	return srv.ServeUnix(t)
}

// putID runs a put and returns the id it printed.
func putID(t *testing.T, r result) string {
	t.Helper()
	wantCode(t, r, 0)
	id, ok := strings.CutPrefix(r.out, "document/")
	id, _, found := strings.Cut(id, " ")
	if !ok || !found || !strings.HasSuffix(r.out, " created in bucket notes of agent coder\n") {
		t.Fatalf("put: %q", r.out)
	}
	return id
}

func TestBucketPutSearchListDelete(t *testing.T) {
	url := bucketServer(t)
	deploy := putID(t, aictl(t, url, "bucket", "put", "coder", "notes", "--title", "Deploy", "--tag", "ops", "--tag", "prod",
		"The", "deploy", "runs", "at", "noon."))
	readme := putID(t, aictlIn(t, t.Context(), url, "# Readme\nThe release train leaves on Friday.\n",
		"bucket", "put", "coder", "notes", "--title", "README", "-"))

	r := aictl(t, url, "bucket", "get", "coder", "notes", readme)
	wantCode(t, r, 0)
	if r.out != "# Readme\nThe release train leaves on Friday.\n" {
		t.Fatalf("get: %q", r.out)
	}

	r = aictl(t, url, "bucket", "search", "coder", "notes", "deploying")
	wantCode(t, r, 0)
	rows := cells(r.out)
	if len(rows) != 2 || strings.Join(rows[0], ",") != "ID,TITLE,SCORE,SNIPPET" || rows[1][0] != deploy || rows[1][1] != "Deploy" ||
		!strings.Contains(r.out, "**deploy**") {
		t.Fatalf("search:\n%s", r.out)
	}
	r = aictl(t, url, "bucket", "search", "coder", "notes", `"release train"`, "--limit", "1", "-o", "json")
	wantCode(t, r, 0)
	var res recallwire.SearchResult
	if err := json.Unmarshal([]byte(r.out), &res); err != nil || len(res.Items) != 1 || res.Items[0].ID != readme || res.Query != `"release train"` {
		t.Fatalf("search -o json: %v\n%s", err, r.out)
	}
	r = aictl(t, url, "bucket", "search", "coder", "notes", "nothing-like-this")
	wantCode(t, r, 0)
	if r.out != "" || r.err != "No documents match.\n" {
		t.Fatalf("no hits: %+v", r)
	}

	r = aictl(t, url, "bucket", "list", "coder")
	wantCode(t, r, 0)
	if rows := cells(r.out); len(rows) != 2 || strings.Join(rows[1], ",") != "notes,2" {
		t.Fatalf("list buckets:\n%s", r.out)
	}
	r = aictl(t, url, "bucket", "list", "coder", "notes")
	wantCode(t, r, 0)
	rows = cells(r.out)
	if len(rows) != 3 || strings.Join(rows[0], ",") != "ID,TITLE,TAGS,SIZE,AGE" || rows[1][0] != deploy ||
		rows[1][2] != "ops,prod" || rows[1][3] != "24" || rows[2][0] != readme {
		t.Fatalf("list documents:\n%s", r.out)
	}
	r = aictl(t, url, "bucket", "list", "coder", "notes", "--limit", "1", "-o", "json")
	wantCode(t, r, 0)
	var list recallwire.DocumentList
	if err := json.Unmarshal([]byte(r.out), &list); err != nil || len(list.Items) != 1 || list.Continue != deploy {
		t.Fatalf("list -o json: %v\n%s", err, r.out)
	}
	r = aictl(t, url, "bucket", "list", "coder", "notes", "--limit", "1")
	wantCode(t, r, 0)
	if !strings.Contains(r.err, "--after "+deploy) {
		t.Fatalf("no next-page hint: %q", r.err)
	}

	r = aictl(t, url, "bucket", "delete", "coder", "notes", deploy)
	wantCode(t, r, 0)
	if r.out != "document \""+deploy+"\" deleted\n" {
		t.Fatalf("delete: %q", r.out)
	}
	r = aictl(t, url, "bucket", "delete", "coder", "notes", deploy)
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "(NotFound)") {
		t.Fatalf("delete again: %q", r.err)
	}
}

func TestBucketRefusals(t *testing.T) {
	url := bucketServer(t)
	r := aictl(t, url, "bucket", "search", "coder", "notes", `cats "unclosed`)
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "(BadRequest)") || !strings.Contains(r.err, "offset 5") {
		t.Fatalf("malformed query: %q", r.err)
	}
	r = aictl(t, url, "bucket", "list", "nobody")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "(NotFound)") || !strings.Contains(r.err, "nobody") {
		t.Fatalf("unknown agent: %q", r.err)
	}
	r = aictlIn(t, t.Context(), url, strings.Repeat("x", recallwire.MaxBodyBytes+1), "bucket", "put", "coder", "notes", "-")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "262144") {
		t.Fatalf("over the limit: %q", r.err)
	}
	r = aictl(t, url, "bucket", "put", "coder", "notes", strings.Repeat("y", recallwire.MaxBodyBytes+1))
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "(RequestEntityTooLarge)") || !strings.Contains(r.err, "262144") {
		t.Fatalf("over the limit, from the server: %q", r.err)
	}
	r = aictl(t, url, "bucket", "list", "coder")
	wantCode(t, r, 0)
	if r.err != "No recall buckets for agent coder.\n" {
		t.Fatalf("refused puts stored something: %+v", r)
	}
}
