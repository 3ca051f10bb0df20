// Package builtin assembles the registry of harness adapters compiled into the
// guest: claude, codex, gemini, opencode and the fake. A new CLI gets one
// package under guest/harness/<name> and one line in Registry.
package builtin
