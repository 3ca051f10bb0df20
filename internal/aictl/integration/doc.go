// Package integration holds aictl's end-to-end tests and benchmark against a
// real in-process supervisor (pebble store, API server, controllers) over its
// unix socket and TLS listener. It has no non-test code.
package integration
