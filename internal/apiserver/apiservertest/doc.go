// Package apiservertest serves the real API server for client tests: the
// supervisor's validation, admission, authentication and pebble store (in a
// temporary directory), on a unix socket, over TLS with namespace-bound bearer
// tokens, or on loopback HTTP, with hooks to write as a controller would,
// count requests and end watch streams.
package apiservertest
