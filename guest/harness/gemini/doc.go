// Package gemini is the harness adapter for Gemini CLI: launch flags and a
// pre-seeded ~/.gemini/settings.json, pre-assigned session ids and native
// resume, screen cues, and transcripts from its JSONL chat files.
package gemini
