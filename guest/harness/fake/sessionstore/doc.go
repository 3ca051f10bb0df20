// Package sessionstore is the fake CLI's native session store: one
// Claude-shaped JSONL file per session under ~/.fake/sessions/. The fake CLI
// writes it and the fake harness adapter reads it back.
package sessionstore
