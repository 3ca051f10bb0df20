package recallapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/recall"
	"aicli.dev/aicli/internal/recall/recallapi/recallapitest"
	"aicli.dev/aicli/internal/recall/recallwire"
)

type env struct {
	t   *testing.T
	url string
	r   *recall.Recall
}

// serve mounts the recall endpoints on the real API server (real pebble
// store) with agent team-a/alice, as the owner of team-a.
func serve(t *testing.T) *env {
	t.Helper()
	srv := apiservertest.New(t)
	r := recallapitest.Mount(t, srv, "team-a/alice")
	return &env{t: t, url: srv.ServeLoopback(t, &apiserver.Principal{Name: "team-a", Namespaces: []string{"team-a"}}), r: r}
}

// do sends a request to path (relative to …/agents/alice/buckets unless it
// starts with /apis) and checks the status code.
func (e *env) do(method, path, contentType string, body []byte, wantCode int) []byte {
	e.t.Helper()
	if !strings.HasPrefix(path, "/apis") {
		path = recallwire.AgentPath("team-a", "alice") + path
	}
	req, err := http.NewRequest(method, e.url+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantCode {
		e.t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, wantCode, data)
	}
	return data
}

func (e *env) create(bucket string, d recallwire.NewDocument) recallwire.Document {
	e.t.Helper()
	body, _ := json.Marshal(d)
	var out recallwire.Document
	if err := json.Unmarshal(e.do(http.MethodPost, "/"+bucket+"/documents", "application/json", body, http.StatusCreated), &out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) search(bucket, q string) []string {
	e.t.Helper()
	var res recallwire.SearchResult
	path := recallwire.WithQuery("/"+bucket+"/search", url.Values{"q": {q}})
	if err := json.Unmarshal(e.do(http.MethodGet, path, "", nil, http.StatusOK), &res); err != nil {
		e.t.Fatal(err)
	}
	ids := make([]string, len(res.Items))
	for i, h := range res.Items {
		ids[i] = h.ID
	}
	return ids
}

// status decodes an error reply's message.
func status(t *testing.T, data []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(data, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status: %s", data)
	}
	return st
}

func TestDocumentsCRUD(t *testing.T) {
	e := serve(t)
	a := e.create("notes", recallwire.NewDocument{Title: "Deploy", Tags: []string{"ops"}, Body: "The deploy runs at noon."})
	if a.ID == "" || a.Title != "Deploy" || a.Size != 24 || a.Updated.IsZero() || a.Body != "" {
		t.Fatalf("create reply %+v", a)
	}
	// text/plain: the body itself, title and tags from the query.
	var b recallwire.Document
	if err := json.Unmarshal(e.do(http.MethodPut, "/notes/documents?title=Plain&tag=x&tag=y", "text/plain; charset=utf-8",
		[]byte("a plain body"), http.StatusCreated), &b); err != nil || b.Title != "Plain" || !slices.Equal(b.Tags, []string{"x", "y"}) {
		t.Fatalf("text/plain create %+v %v", b, err)
	}
	e.create("other", recallwire.NewDocument{Body: "elsewhere"})

	var got recallwire.Document
	if err := json.Unmarshal(e.do(http.MethodGet, "/notes/documents/"+a.ID, "", nil, http.StatusOK), &got); err != nil ||
		got.Body != "The deploy runs at noon." || got.Tags[0] != "ops" {
		t.Fatalf("get %+v %v", got, err)
	}
	var list recallwire.DocumentList
	if err := json.Unmarshal(e.do(http.MethodGet, "/notes/documents", "", nil, http.StatusOK), &list); err != nil ||
		len(list.Items) != 2 || list.Items[0].Body != "" || list.Continue != "" {
		t.Fatalf("list %+v %v", list, err)
	}
	if err := json.Unmarshal(e.do(http.MethodGet, "/notes/documents?limit=1", "", nil, http.StatusOK), &list); err != nil ||
		len(list.Items) != 1 || list.Continue != list.Items[0].ID {
		t.Fatalf("first page %+v %v", list, err)
	}
	if err := json.Unmarshal(e.do(http.MethodGet, "/notes/documents?limit=1&after="+list.Continue, "", nil, http.StatusOK), &list); err != nil ||
		len(list.Items) != 1 {
		t.Fatalf("second page %+v %v", list, err)
	}
	var buckets recallwire.BucketList
	if err := json.Unmarshal(e.do(http.MethodGet, "", "", nil, http.StatusOK), &buckets); err != nil ||
		len(buckets.Items) != 2 || buckets.Items[0] != (recallwire.Bucket{Name: "notes", Documents: 2}) ||
		buckets.Items[1] != (recallwire.Bucket{Name: "other", Documents: 1}) {
		t.Fatalf("buckets %+v %v", buckets, err)
	}

	e.do(http.MethodDelete, "/notes/documents/"+a.ID, "", nil, http.StatusOK)
	e.do(http.MethodGet, "/notes/documents/"+a.ID, "", nil, http.StatusNotFound)
	e.do(http.MethodDelete, "/notes/documents/"+a.ID, "", nil, http.StatusNotFound)
	if ids := e.search("notes", "deploy"); len(ids) != 0 {
		t.Fatalf("deleted document still found: %v", ids)
	}
	e.do(http.MethodPatch, "/notes/documents", "", nil, http.StatusMethodNotAllowed)
}

func TestSearchThroughTheAPI(t *testing.T) {
	e := serve(t)
	run := e.create("notes", recallwire.NewDocument{Title: "Morning", Body: "She runs along the river every morning."})
	train := e.create("notes", recallwire.NewDocument{Title: "Release", Body: "The release train leaves on Friday."})
	split := e.create("notes", recallwire.NewDocument{Title: "Mixed", Body: "Release notes mention a train of thought."})
	cats := e.create("notes", recallwire.NewDocument{Title: "Cats", Body: "Cats sleep most of the day. Cats cats cats."})
	onecat := e.create("notes", recallwire.NewDocument{Title: "Garden",
		Body: "A cat crossed the garden while we discussed tomatoes, peppers and beans at length."})

	if got := e.search("notes", "running"); !slices.Equal(got, []string{run.ID}) {
		t.Errorf("stemming: running → %v", got)
	}
	if got := e.search("notes", `"release train"`); !slices.Equal(got, []string{train.ID}) {
		t.Errorf("phrase → %v", got)
	}
	if got := e.search("notes", "+release -friday"); !slices.Equal(got, []string{split.ID}) {
		t.Errorf("+release -friday → %v", got)
	}
	var res recallwire.SearchResult
	if err := json.Unmarshal(e.do(http.MethodGet, "/notes/search?q=cat&limit=5", "", nil, http.StatusOK), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 2 || res.Items[0].ID != cats.ID || res.Items[1].ID != onecat.ID ||
		res.Items[0].Score <= res.Items[1].Score || res.Items[0].Title != "Cats" || !strings.Contains(res.Items[1].Snippet, "**cat**") {
		t.Fatalf("ranking: %+v", res.Items)
	}
	if err := json.Unmarshal(e.do(http.MethodGet, "/notes/search?q=cat&limit=1", "", nil, http.StatusOK), &res); err != nil || len(res.Items) != 1 {
		t.Fatalf("limit=1: %+v %v", res.Items, err)
	}
	if got := e.search("empty", "cat"); len(got) != 0 {
		t.Fatalf("a bucket without documents: %v", got)
	}
}

func TestRefusals(t *testing.T) {
	e := serve(t)
	e.create("notes", recallwire.NewDocument{Body: "something"})

	// Over the body limit: refused (413) naming the limit, both encodings; nothing stored.
	big := strings.Repeat("x", recall.MaxBodyBytes+1)
	body, _ := json.Marshal(recallwire.NewDocument{Body: big})
	for _, msg := range []string{
		status(t, e.do(http.MethodPost, "/notes/documents", "application/json", body, http.StatusRequestEntityTooLarge)).Message,
		status(t, e.do(http.MethodPost, "/notes/documents", "text/plain", []byte(big), http.StatusRequestEntityTooLarge)).Message,
	} {
		if !strings.Contains(msg, "262144") {
			t.Errorf("413 message %q does not name the limit", msg)
		}
	}
	e.do(http.MethodPost, "/notes/documents", "text/plain", []byte(big[1:]), http.StatusCreated)
	var list recallwire.DocumentList
	if err := json.Unmarshal(e.do(http.MethodGet, "/notes/documents", "", nil, http.StatusOK), &list); err != nil || len(list.Items) != 2 {
		t.Fatalf("after refusals: %+v %v", list, err)
	}

	// Malformed query: 400 naming the byte offset.
	q := url.Values{"q": {`cats "unclosed phrase`}}
	msg := status(t, e.do(http.MethodGet, recallwire.WithQuery("/notes/search", q), "", nil, http.StatusBadRequest)).Message
	if !strings.Contains(msg, "offset 5") {
		t.Fatalf("malformed query message %q does not name offset 5", msg)
	}
	e.do(http.MethodGet, "/notes/search", "", nil, http.StatusBadRequest) // no query
	e.do(http.MethodGet, "/notes/search?q=x&limit=zero", "", nil, http.StatusBadRequest)

	// Unknown agent: 404 on every endpoint.
	other := recallwire.AgentPath("team-a", "bob")
	for _, p := range []string{"", "/notes/documents", "/notes/search?q=x", "/notes/documents/abc"} {
		st := status(t, e.do(http.MethodGet, other+p, "", nil, http.StatusNotFound))
		if !strings.Contains(st.Message, "bob") {
			t.Errorf("404 %q does not name the agent", st.Message)
		}
	}
	e.do(http.MethodPost, other+"/notes/documents", "text/plain", []byte("x"), http.StatusNotFound)

	// Bad names, empty bodies, unknown fields: 400.
	e.do(http.MethodPost, "/.hidden/documents", "text/plain", []byte("x"), http.StatusBadRequest)
	e.do(http.MethodGet, "/bad%20name/search?q=x", "", nil, http.StatusBadRequest)
	e.do(http.MethodGet, "/Notes/documents", "", nil, http.StatusBadRequest)
	e.do(http.MethodGet, "/notes/documents/.x", "", nil, http.StatusBadRequest)
	e.do(http.MethodPost, "/notes/documents", "text/plain", []byte("  \n"), http.StatusBadRequest)
	e.do(http.MethodPost, "/notes/documents", "application/json", []byte(`{"bdy":"typo"}`), http.StatusBadRequest)

	// Another namespace: forbidden.
	e.do(http.MethodGet, recallwire.AgentPath("team-b", "alice"), "", nil, http.StatusForbidden)
}
