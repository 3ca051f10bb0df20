// Package apiserver serves the aicli.dev resources over a Kubernetes-shaped
// HTTP/JSON API (list, get, create, update, merge-patch, delete, status,
// history and streaming watch), on a unix socket for the local admin and on
// TCP with TLS and namespace-bound bearer tokens.
package apiserver
