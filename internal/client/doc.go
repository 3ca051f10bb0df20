// Package client talks to the aicli supervisor's Kubernetes-shaped HTTP API
// over its unix socket or HTTPS, with objects as unstructured values and
// failures as apimachinery StatusErrors, and follows objects through the
// API's watch: until a condition holds, or until a conversation is live.
package client
