// Command checkdeps enforces the module's import boundaries: the client binary
// (cmd/aictl) links none of the server (its store, API server, pebble,
// prometheus), and apis/ imports only the standard library and apimachinery.
// It runs in `make lint`; it exits 1 naming each offending import chain, and 2
// when it cannot check.
package main
