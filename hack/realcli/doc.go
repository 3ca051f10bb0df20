// Package realcli holds the real-CLI tier for the claude, codex, gemini and
// opencode harness adapters: tests (build tag realcli) that run the pinned
// CLIs installed by install.sh under the guest's PTY host against
// internal/fakeprovider.
package realcli
