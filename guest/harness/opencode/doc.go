// Package opencode is the harness adapter for OpenCode: launch flags and a
// pre-seeded opencode.json provider, session-id discovery and native resume,
// screen cues, and transcripts from rows of its SQLite session store.
package opencode
