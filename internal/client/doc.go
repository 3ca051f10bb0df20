// Package client talks to the aicli supervisor's Kubernetes-shaped HTTP API
// over its unix socket or HTTPS, with objects as unstructured values and
// failures as apimachinery StatusErrors.
package client
