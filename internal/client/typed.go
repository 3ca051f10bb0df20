package client

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// ToTyped converts an object returned by the client into a typed API object
// such as *v1alpha1.Agent.
func ToTyped(obj *unstructured.Unstructured, into runtime.Object) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		return fmt.Errorf("converting %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// FromTyped converts a typed API object into the unstructured form the
// client sends, with apiVersion and kind filled in from the aicli.dev scheme.
func (c *Client) FromTyped(obj runtime.Object) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: content}
	if u.GetKind() == "" {
		gvks, _, err := c.reg.Scheme().ObjectKinds(obj)
		if err != nil || len(gvks) == 0 {
			return nil, fmt.Errorf("%T is not an aicli.dev type: %w", obj, err)
		}
		u.SetAPIVersion(gvks[0].GroupVersion().String())
		u.SetKind(gvks[0].Kind)
	}
	return u, nil
}

// Close releases the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }
