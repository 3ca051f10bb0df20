package recallapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/recall"
	"aicli.dev/aicli/internal/recall/recallwire"
)

// Agents finds agents; *store.Store implements it.
type Agents interface {
	Get(ctx context.Context, resource, namespace, name string) (*unstructured.Unstructured, error)
}

// List limits of GET …/documents.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// maxJSONBytes bounds a JSON create: the body limit with room for JSON
// escaping, the title and the tags.
const maxJSONBytes = 8*recall.MaxBodyBytes + 256<<10

var (
	agentsGR    = v1alpha1.GroupVersion.WithResource("agents").GroupResource()
	bucketsGR   = v1alpha1.GroupVersion.WithResource(recallwire.Buckets).GroupResource()
	documentsGR = v1alpha1.GroupVersion.WithResource(recallwire.Documents).GroupResource()
)

// Mount serves the recall endpoints on s. Requests are authenticated like
// every API request and the caller must be allowed in the namespace.
func Mount(s *apiserver.Server, r *recall.Recall, agents Agents) {
	h := &handler{r: r, agents: agents}
	base := apischema.APIPath + "/namespaces/{namespace}/agents/{agent}/" + recallwire.Buckets
	s.Handle(base, apiserver.Authorized("agents/recallbuckets", h.route(h.buckets, http.MethodGet)))
	s.Handle(base+"/{bucket}/"+recallwire.Documents, apiserver.Authorized("agents/recallbuckets",
		h.route(h.documents, http.MethodGet, http.MethodPost, http.MethodPut)))
	s.Handle(base+"/{bucket}/"+recallwire.Documents+"/{id}", apiserver.Authorized("agents/recallbuckets",
		h.route(h.document, http.MethodGet, http.MethodDelete)))
	s.Handle(base+"/{bucket}/"+recallwire.Search, apiserver.Authorized("agents/recallbuckets", h.route(h.search, http.MethodGet)))
}

type handler struct {
	r      *recall.Recall
	agents Agents
}

// call is one request: its agent exists, its bucket name (when the path has
// one) is valid.
type call struct {
	w   http.ResponseWriter
	r   *http.Request
	ref recall.BucketRef
}

// route checks the method, the bucket name and the agent, then runs h. A
// handler's error is written as a Status.
func (h *handler) route(fn func(*call) error, methods ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &call{w: w, r: r, ref: recall.BucketRef{
			Namespace: r.PathValue("namespace"), Agent: r.PathValue("agent"), Bucket: r.PathValue("bucket")}}
		err := h.check(c, methods)
		if err == nil {
			err = fn(c)
		}
		if err != nil {
			apiserver.WriteError(w, apiError(err))
		}
	})
}

func (h *handler) check(c *call, methods []string) error {
	ok := false
	for _, m := range methods {
		ok = ok || c.r.Method == m
	}
	if !ok {
		return apierrors.NewMethodNotSupported(documentsGR, c.r.Method)
	}
	if c.ref.Bucket != "" {
		if err := recall.CheckBucket(c.ref.Bucket); err != nil {
			return err
		}
	}
	if _, err := h.agents.Get(c.r.Context(), "agents", c.ref.Namespace, c.ref.Agent); err != nil {
		if apierrors.IsNotFound(err) {
			return apierrors.NewNotFound(agentsGR, c.ref.Agent)
		}
		return err
	}
	return nil
}

// buckets is GET …/buckets.
func (h *handler) buckets(c *call) error {
	infos, err := h.r.Buckets(c.r.Context(), c.ref.Namespace, c.ref.Agent)
	if err != nil {
		return err
	}
	list := recallwire.BucketList{Items: make([]recallwire.Bucket, 0, len(infos))}
	for _, b := range infos {
		list.Items = append(list.Items, recallwire.Bucket{Name: b.Name, Documents: b.Documents})
	}
	return writeJSON(c.w, http.StatusOK, list)
}

// documents is GET (list) and POST/PUT (create) on …/documents.
func (h *handler) documents(c *call) error {
	if c.r.Method == http.MethodGet {
		return h.list(c)
	}
	d, err := readDocument(c)
	if err != nil {
		return err
	}
	out, err := h.r.Put(c.r.Context(), c.ref, d)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusCreated, wireDoc(out, false))
}

func (h *handler) list(c *call) error {
	q := c.r.URL.Query()
	limit, err := intParam(q.Get(recallwire.ParamLimit), DefaultListLimit, MaxListLimit)
	if err != nil {
		return err
	}
	after := q.Get(recallwire.ParamAfter)
	if after != "" {
		if err := recall.CheckName("after", after); err != nil {
			return err
		}
	}
	docs, err := h.r.List(c.r.Context(), c.ref, limit, after)
	if err != nil {
		return err
	}
	list := recallwire.DocumentList{Items: make([]recallwire.Document, 0, len(docs))}
	for _, d := range docs {
		list.Items = append(list.Items, wireDoc(d, false))
	}
	if len(docs) == limit {
		list.Continue = docs[len(docs)-1].ID
	}
	return writeJSON(c.w, http.StatusOK, list)
}

// document is GET and DELETE on …/documents/{id}.
func (h *handler) document(c *call) error {
	id := c.r.PathValue("id")
	if err := recall.CheckName("document id", id); err != nil {
		return err
	}
	d, err := h.r.Get(c.r.Context(), c.ref, id)
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(documentsGR, id)
	}
	if err != nil {
		return err
	}
	if c.r.Method == http.MethodGet {
		return writeJSON(c.w, http.StatusOK, wireDoc(d, true))
	}
	if err := h.r.Delete(c.r.Context(), c.ref, id); err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: id, Group: documentsGR.Group, Kind: documentsGR.Resource},
	})
}

// search is GET …/search?q=&limit=.
func (h *handler) search(c *call) error {
	q := c.r.URL.Query()
	limit, err := intParam(q.Get(recallwire.ParamLimit), recall.DefaultSearchLimit, recall.MaxSearchLimit)
	if err != nil {
		return err
	}
	query := q.Get(recallwire.ParamQuery)
	hits, err := h.r.Search(c.r.Context(), c.ref, query, limit)
	if err != nil {
		return err
	}
	res := recallwire.SearchResult{Query: query, Items: make([]recallwire.Hit, 0, len(hits))}
	for _, hit := range hits {
		res.Items = append(res.Items, recallwire.Hit{ID: hit.ID, Title: hit.Title, Score: hit.Score, Snippet: hit.Snippet})
	}
	return writeJSON(c.w, http.StatusOK, res)
}

// readDocument reads a create's body: JSON (NewDocument), or with a
// text/plain content type the document body itself, titled and tagged by
// the title and tag query parameters.
func readDocument(c *call) (recall.Doc, error) {
	mt, _, _ := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if mt == recallwire.ContentTypeText {
		body, err := io.ReadAll(http.MaxBytesReader(c.w, c.r.Body, recall.MaxBodyBytes))
		if err != nil {
			return recall.Doc{}, readError(err)
		}
		q := c.r.URL.Query()
		return recall.Doc{Title: q.Get(recallwire.ParamTitle), Tags: q[recallwire.ParamTag], Body: string(body)}, nil
	}
	var nd recallwire.NewDocument
	dec := json.NewDecoder(http.MaxBytesReader(c.w, c.r.Body, maxJSONBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&nd); err != nil {
		return recall.Doc{}, readError(err)
	}
	return recall.Doc{Title: nd.Title, Tags: nd.Tags, Body: nd.Body}, nil
}

func readError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
			"recall documents are limited to %d bytes (%d KiB) of body", recall.MaxBodyBytes, recall.MaxBodyBytes>>10))
	}
	return apierrors.NewBadRequest("reading the document: " + err.Error())
}

// apiError maps recall's errors to API statuses.
func apiError(err error) error {
	var qe *recall.QueryError
	switch {
	case errors.As(err, &qe):
		return apierrors.NewBadRequest(qe.Error())
	case errors.Is(err, recall.ErrTooLarge):
		return apierrors.NewRequestEntityTooLargeError(err.Error())
	case errors.Is(err, recall.ErrInvalid):
		return apierrors.NewBadRequest(err.Error())
	case errors.Is(err, recall.ErrClosed):
		return apierrors.NewServiceUnavailable(err.Error())
	}
	return err
}

func intParam(v string, def, maxV int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("limit %q: want a positive number", v))
	}
	return min(n, maxV), nil
}

func wireDoc(d recall.Doc, body bool) recallwire.Document {
	w := recallwire.Document{ID: d.ID, Title: d.Title, Tags: d.Tags, Size: len(d.Body), Updated: d.Updated}
	if body {
		w.Body = d.Body
	}
	return w
}

// writeJSON answers v; its nil error lets a handler end with it.
func writeJSON(w http.ResponseWriter, code int, v any) error {
	apiserver.WriteJSON(w, code, v)
	return nil
}
