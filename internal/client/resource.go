package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"aicli.dev/aicli/internal/apischema"
)

// ListOptions narrow a list or watch.
type ListOptions struct {
	// LabelSelector is a Kubernetes label selector ("app=x,tier!=db").
	LabelSelector string
	// ResourceVersion starts a watch after this version; empty means now.
	ResourceVersion string
	// AllowWatchBookmarks asks the server for BOOKMARK events on a watch.
	AllowWatchBookmarks bool
}

func (o ListOptions) query(watch bool) string {
	q := url.Values{}
	if o.LabelSelector != "" {
		q.Set("labelSelector", o.LabelSelector)
	}
	if o.ResourceVersion != "" {
		q.Set("resourceVersion", o.ResourceVersion)
	}
	if watch {
		q.Set("watch", "true")
		if o.AllowWatchBookmarks {
			q.Set("allowWatchBookmarks", "true")
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// WriteOptions modify a create, update or patch.
type WriteOptions struct {
	// DryRun validates and defaults the write on the server without storing it.
	DryRun bool
}

func (o WriteOptions) query() string {
	if o.DryRun {
		return "?dryRun=All"
	}
	return ""
}

// HistoryEntry is one recorded change of an object, as /history serves it.
type HistoryEntry struct {
	// ResourceVersion is the version the change produced.
	ResourceVersion string `json:"resourceVersion"`
	// Type is ADDED, MODIFIED, STATUS or DELETED.
	Type string `json:"type"`
	// Time is when the change was stored.
	Time metav1.Time `json:"time"`
	// Object is the object as the change left it.
	Object *unstructured.Unstructured `json:"object,omitempty"`
}

// Resource resolves a kind, plural, singular or short name to its resource.
func (c *Client) Resource(name string) (*apischema.Resource, error) {
	if res, ok := c.reg.Lookup(name); ok {
		return res, nil
	}
	if res, ok := c.reg.ForKind(name); ok {
		return res, nil
	}
	return nil, fmt.Errorf("the server doesn't have a resource type %q", name)
}

// resourceOf maps an object's kind to its resource.
func (c *Client) resourceOf(obj *unstructured.Unstructured) (*apischema.Resource, error) {
	res, ok := c.reg.ForKind(obj.GetKind())
	if !ok {
		return nil, fmt.Errorf("no matches for kind %q in version %q", obj.GetKind(), obj.GetAPIVersion())
	}
	return res, nil
}

// Get reads one object.
func (c *Client) Get(ctx context.Context, plural, namespace, name string) (*unstructured.Unstructured, error) {
	return c.object(ctx, http.MethodGet, ResourcePath(plural, namespace, name), "", nil)
}

// List reads the objects of plural in namespace (all namespaces when empty).
func (c *Client) List(ctx context.Context, plural, namespace string, opts ListOptions) (*unstructured.UnstructuredList, error) {
	data, err := c.DoRaw(ctx, http.MethodGet, ResourcePath(plural, namespace, "")+opts.query(false), "", nil)
	if err != nil {
		return nil, err
	}
	list, err := decodeList(data)
	if err != nil {
		return nil, fmt.Errorf("decoding %s list: %w", plural, err)
	}
	return list, nil
}

// decodeList decodes a list in one pass; items without kind inherit it from
// the list's kind, as the API server leaves them bare in typed lists.
func decodeList(data []byte) (*unstructured.UnstructuredList, error) {
	var m map[string]any
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{Object: m}
	rawItems, _ := m["items"].([]any)
	delete(m, "items")
	itemKind := strings.TrimSuffix(list.GetKind(), "List")
	list.Items = make([]unstructured.Unstructured, 0, len(rawItems))
	for i, it := range rawItems {
		obj, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("items[%d] is not an object", i)
		}
		u := unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" && u.GetAPIVersion() == "" {
			u.SetKind(itemKind)
			u.SetAPIVersion(list.GetAPIVersion())
		}
		list.Items = append(list.Items, u)
	}
	return list, nil
}

// Create stores a new object; its kind selects the resource and its
// namespace the path.
func (c *Client) Create(ctx context.Context, obj *unstructured.Unstructured, opts WriteOptions) (*unstructured.Unstructured, error) {
	res, err := c.resourceOf(obj)
	if err != nil {
		return nil, err
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", obj.GetName(), err)
	}
	return c.object(ctx, http.MethodPost, ResourcePath(res.Plural, obj.GetNamespace(), "")+opts.query(), ContentTypeJSON, body)
}

// Update replaces an object's spec and metadata; metadata.resourceVersion,
// when set, is a precondition (a stale one fails with a Conflict).
func (c *Client) Update(ctx context.Context, obj *unstructured.Unstructured, opts WriteOptions) (*unstructured.Unstructured, error) {
	return c.put(ctx, obj, opts)
}

// UpdateStatus replaces an object's status through the status subresource.
func (c *Client) UpdateStatus(ctx context.Context, obj *unstructured.Unstructured, opts WriteOptions) (*unstructured.Unstructured, error) {
	return c.put(ctx, obj, opts, "status")
}

func (c *Client) put(ctx context.Context, obj *unstructured.Unstructured, opts WriteOptions, sub ...string) (*unstructured.Unstructured, error) {
	res, err := c.resourceOf(obj)
	if err != nil {
		return nil, err
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", obj.GetName(), err)
	}
	return c.object(ctx, http.MethodPut, ResourcePath(res.Plural, obj.GetNamespace(), obj.GetName(), sub...)+opts.query(), ContentTypeJSON, body)
}

// Patch applies a JSON merge patch (RFC 7386) to an object, or to its
// subresource when one is named ("status").
func (c *Client) Patch(ctx context.Context, plural, namespace, name string, patch []byte, opts WriteOptions, subresource ...string) (*unstructured.Unstructured, error) {
	return c.object(ctx, http.MethodPatch, ResourcePath(plural, namespace, name, subresource...)+opts.query(), ContentTypeMergePatch, patch)
}

// Delete deletes an object. It returns the object when finalizers keep it
// (with its deletionTimestamp set), and nil once it is gone.
func (c *Client) Delete(ctx context.Context, plural, namespace, name string) (*unstructured.Unstructured, error) {
	data, err := c.DoRaw(ctx, http.MethodDelete, ResourcePath(plural, namespace, name), "", nil)
	if err != nil {
		return nil, err
	}
	obj, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	if obj == nil || obj.GetKind() == "Status" {
		return nil, nil
	}
	return obj, nil
}

// History returns the recorded changes of one object, oldest first.
func (c *Client) History(ctx context.Context, plural, namespace, name string) ([]HistoryEntry, error) {
	data, err := c.DoRaw(ctx, http.MethodGet, ResourcePath(plural, namespace, name, "history"), "", nil)
	if err != nil {
		return nil, err
	}
	var out struct {
		Items []HistoryEntry `json:"items"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("decoding history of %s/%s: %w", plural, name, err)
	}
	return out.Items, nil
}

// Discovery lists the resources the server serves.
func (c *Client) Discovery(ctx context.Context) (*metav1.APIResourceList, error) {
	data, err := c.DoRaw(ctx, http.MethodGet, apischema.APIPath, "", nil)
	if err != nil {
		return nil, err
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("decoding discovery: %w", err)
	}
	return &list, nil
}

func (c *Client) object(ctx context.Context, method, path, contentType string, body []byte) (*unstructured.Unstructured, error) {
	data, err := c.DoRaw(ctx, method, path, contentType, body)
	if err != nil {
		return nil, err
	}
	obj, err := decodeObject(data)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if obj == nil {
		return nil, fmt.Errorf("%s %s: empty response", method, path)
	}
	return obj, nil
}

// decodeObject decodes a JSON object, keeping whole numbers as int64.
func decodeObject(data []byte) (*unstructured.Unstructured, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decoding object: %w", err)
	}
	if m == nil {
		return nil, nil
	}
	return &unstructured.Unstructured{Object: m}, nil
}
