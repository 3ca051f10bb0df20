// Package claude reads Claude Code's session transcripts (projects/**/*.jsonl) into spend events.
package claude
