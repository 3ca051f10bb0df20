// Package cli is the fake AI CLI used to test the guest: a small TUI with a
// prompt, a busy spinner, scripted permission prompts and crashes, and a
// Claude-shaped native session store that supports pre-assigned ids and resume.
package cli
