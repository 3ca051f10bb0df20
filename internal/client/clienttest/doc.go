// Package clienttest is an in-memory stand-in for the supervisor API server,
// served over a real unix socket or HTTPS listener, for testing API clients.
// It validates writes with the real apischema decoder and keeps the contract's
// semantics: resourceVersions, generation, no-op updates, finalizers, history,
// watches from a version, dry runs and bearer tokens.
package clienttest
