// Package remote is the target side of a monitor whose target lives on
// another supervisor (spec.target.supervisor, docs/monitors.md): it reaches
// that supervisor only through its public API (internal/client over TLS with
// a namespace-bound bearer token from a supervisor-held Secret) to read the
// catalog, follow transcripts from a cursor, send attributed advice and pause
// a conversation.
package remote
