// Package codex is the harness adapter for the OpenAI Codex CLI: launch flags
// and a pre-seeded config.toml, session-id discovery and native resume, screen
// cues, paste-then-Enter delivery, and transcripts from its rollout files.
package codex
