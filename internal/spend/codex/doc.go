// Package codex reads Codex CLI rollout files (sessions/YYYY/MM/DD/rollout-*.jsonl and archived_sessions/) into
// spend events and live quota snapshots.
package codex
