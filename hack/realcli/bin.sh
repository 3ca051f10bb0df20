#!/usr/bin/env bash
# Prints the path of an installed real CLI binary (claude, codex, gemini or opencode) under hack/realcli/.npm.
# OpenCode is its native "baseline" x64 build, the one images/opencode ships.
# Codex is run as its static binary, not through the node wrapper (which survives SIGKILL of node).
set -euo pipefail
prefix="$(cd "$(dirname "$0")" && pwd)/.npm"
case "${1:-}" in
  claude)
    for p in "$prefix/node_modules/@anthropic-ai/claude-code/bin/claude.exe" "$prefix/node_modules/.bin/claude"; do
      [ -x "$p" ] && { echo "$p"; exit 0; }
    done ;;
  codex)
    p="$(find "$prefix/node_modules/@openai" -path '*/vendor/*/bin/codex' -type f 2>/dev/null | head -1)"
    [ -n "$p" ] && { echo "$p"; exit 0; } ;;
  gemini)
    p="$prefix/node_modules/.bin/gemini"
    [ -x "$p" ] && { echo "$p"; exit 0; } ;;
  opencode)
    p="$prefix/node_modules/opencode-linux-x64-baseline/bin/opencode"
    [ -x "$p" ] && { echo "$p"; exit 0; } ;;
  *) echo "usage: $0 claude|codex|gemini|opencode" >&2; exit 2 ;;
esac
echo "not installed: $1 (run hack/realcli/install.sh)" >&2
exit 1
