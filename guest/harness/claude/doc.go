// Package claude is the harness adapter for Claude Code: launch flags and
// pre-seeded ~/.claude.json, native session ids and resume, screen cues, and
// transcripts from its JSONL session store.
package claude
