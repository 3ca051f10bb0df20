package recallwire

import (
	"net/url"
	"strconv"
	"time"

	"aicli.dev/aicli/internal/apischema"
)

// Endpoints, under /namespaces/{namespace}/agents/{agent}:
//
//	GET    buckets                          BucketList
//	POST   buckets/{bucket}/documents       create (NewDocument JSON, or text/plain body) → Document
//	PUT    buckets/{bucket}/documents       the same as POST
//	GET    buckets/{bucket}/documents       DocumentList (?limit=&after=)
//	GET    buckets/{bucket}/documents/{id}  Document with its body
//	DELETE buckets/{bucket}/documents/{id}
//	GET    buckets/{bucket}/search          SearchResult (?q=&limit=)
const (
	Buckets   = "buckets"
	Documents = "documents"
	Search    = "search"
)

// Query parameters.
const (
	ParamLimit = "limit"
	ParamAfter = "after"
	ParamQuery = "q"
	// ParamTitle and ParamTag give a text/plain document its title and tags
	// (tag may repeat).
	ParamTitle = "title"
	ParamTag   = "tag"
)

// Limits, the same as package recall's (which takes them from here).
const (
	// MaxBodyBytes is the largest document body accepted (256 KiB).
	MaxBodyBytes = 256 << 10
	// DefaultSearchLimit is the number of hits when a search names none;
	// MaxSearchLimit caps it.
	DefaultSearchLimit = 10
	MaxSearchLimit     = 100
)

// ContentTypeText is the content type of a document sent as its bare body.
const ContentTypeText = "text/plain"

// NewDocument is the JSON body of a create.
type NewDocument struct {
	// Title is optional; at most 1 KiB.
	Title string `json:"title,omitempty"`
	// Tags are optional; at most 64.
	Tags []string `json:"tags,omitempty"`
	// Body is the text searched; required, at most 256 KiB.
	Body string `json:"body"`
}

// Document is one stored document. Lists leave Body out.
type Document struct {
	ID      string    `json:"id"`
	Title   string    `json:"title,omitempty"`
	Tags    []string  `json:"tags,omitempty"`
	Size    int       `json:"size"`
	Updated time.Time `json:"updated"`
	Body    string    `json:"body,omitempty"`
}

// DocumentList is the reply of GET …/documents, in ID order (time order for
// assigned IDs). Continue, when set, is the after= of the next page.
type DocumentList struct {
	Items    []Document `json:"items"`
	Continue string     `json:"continue,omitempty"`
}

// Bucket is one bucket of an agent.
type Bucket struct {
	Name      string `json:"name"`
	Documents uint64 `json:"documents"`
}

// BucketList is the reply of GET …/buckets, by name.
type BucketList struct {
	Items []Bucket `json:"items"`
}

// Hit is one search result, best first.
type Hit struct {
	ID    string `json:"id"`
	Title string `json:"title,omitempty"`
	// Score is the BM25 relevance; only the order within one result means anything.
	Score float64 `json:"score"`
	// Snippet is part of the body around a match, the match marked **so**.
	Snippet string `json:"snippet"`
}

// SearchResult is the reply of GET …/search.
type SearchResult struct {
	Query string `json:"query"`
	Items []Hit  `json:"items"`
}

// AgentPath is the API path of agent's buckets, or of one bucket and what
// follows it (documents, documents/{id}, search) when rest is given.
func AgentPath(namespace, agent string, rest ...string) string {
	p := apischema.APIPath + "/namespaces/" + url.PathEscape(namespace) + "/agents/" + url.PathEscape(agent) + "/" + Buckets
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// WithQuery appends the non-empty parameters of q to path.
func WithQuery(path string, q url.Values) string {
	for k, vs := range q {
		if len(vs) == 0 || (len(vs) == 1 && vs[0] == "") {
			delete(q, k)
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// Itoa formats a positive limit for a query ("" for zero: the default).
func Itoa(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}
