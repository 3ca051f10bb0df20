// Package storeclient gives controllers typed access to the event store: it
// converts aicli.dev Go types to and from the store's unstructured objects.
package storeclient

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"aicli.dev/aicli/internal/apischema"
)

// Store is the part of the event store the client uses.
type Store interface {
	Get(ctx context.Context, resource, namespace, name string) (*unstructured.Unstructured, error)
	List(ctx context.Context, resource, namespace string, sel labels.Selector) (*unstructured.UnstructuredList, error)
	Create(ctx context.Context, resource string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
	Update(ctx context.Context, resource string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
	UpdateStatus(ctx context.Context, resource string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

// Client reads and writes typed objects in the store.
type Client struct {
	Store    Store
	Registry *apischema.Registry
}

// New returns a client over st with the default registry.
func New(st Store) *Client { return &Client{Store: st, Registry: apischema.Default()} }

func (c *Client) resourceOf(obj runtime.Object) (*apischema.Resource, error) {
	gvks, _, err := c.Registry.Scheme().ObjectKinds(obj)
	if err != nil {
		return nil, err
	}
	kind := gvks[0].Kind
	if len(kind) > 4 && kind[len(kind)-4:] == "List" {
		kind = kind[:len(kind)-4]
	}
	res, ok := c.Registry.ForKind(kind)
	if !ok {
		return nil, fmt.Errorf("storeclient: no resource for kind %s", kind)
	}
	return res, nil
}

// Get reads namespace/name into obj.
func (c *Client) Get(ctx context.Context, namespace, name string, obj client.Object) error {
	res, err := c.resourceOf(obj)
	if err != nil {
		return err
	}
	u, err := c.Store.Get(ctx, res.Plural, namespace, name)
	if err != nil {
		return err
	}
	return fromUnstructured(u, obj)
}

// List reads every object of list's kind in namespace ("" = all) matching sel.
func (c *Client) List(ctx context.Context, namespace string, list client.ObjectList, sel labels.Selector) error {
	res, err := c.resourceOf(list)
	if err != nil {
		return err
	}
	if sel == nil {
		sel = labels.Everything()
	}
	ul, err := c.Store.List(ctx, res.Plural, namespace, sel)
	if err != nil {
		return err
	}
	items := make([]any, 0, len(ul.Items))
	for i := range ul.Items {
		items = append(items, ul.Items[i].Object)
	}
	content := map[string]any{"metadata": map[string]any{"resourceVersion": ul.GetResourceVersion()}, "items": items}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(content, list)
}

// Create stores obj as a new object and refreshes obj from the result.
func (c *Client) Create(ctx context.Context, obj client.Object) error {
	return c.write(ctx, obj, c.Store.Create)
}

// Update writes obj's spec and metadata (resourceVersion precondition) and
// refreshes obj from the result.
func (c *Client) Update(ctx context.Context, obj client.Object) error {
	return c.write(ctx, obj, c.Store.Update)
}

// UpdateStatus writes obj's status (resourceVersion precondition) and
// refreshes obj from the result.
func (c *Client) UpdateStatus(ctx context.Context, obj client.Object) error {
	return c.write(ctx, obj, c.Store.UpdateStatus)
}

func (c *Client) write(ctx context.Context, obj client.Object,
	op func(context.Context, string, *unstructured.Unstructured) (*unstructured.Unstructured, error)) error {
	res, err := c.resourceOf(obj)
	if err != nil {
		return err
	}
	u, err := ToUnstructured(obj, res)
	if err != nil {
		return err
	}
	out, err := op(ctx, res.Plural, u)
	if err != nil {
		return err
	}
	return fromUnstructured(out, obj)
}

// ToUnstructured converts a typed object, stamping its apiVersion and kind.
func ToUnstructured(obj runtime.Object, res *apischema.Resource) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(res.GroupVersionKind())
	return u, nil
}

func fromUnstructured(u *unstructured.Unstructured, obj runtime.Object) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
}
