#!/usr/bin/env bash
# Installs the pinned real AI CLIs into hack/realcli/.npm (git-ignored) for
# fixture capture and the realcli-tagged tests. Usage: hack/realcli/install.sh [claude|codex|gemini|opencode|all]
# (all = every CLI)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
prefix="$here/.npm"
CLAUDE_PKG="@anthropic-ai/claude-code@2.1.332"
CODEX_PKG="@openai/codex@0.171.0"
GEMINI_PKG="@google/gemini-cli@0.61.0"
OPENCODE_PKG="opencode-ai@1.18.33"
want="${1:-all}"
pkgs=()
case "$want" in
  claude) pkgs=("$CLAUDE_PKG") ;;
  codex) pkgs=("$CODEX_PKG") ;;
  gemini) pkgs=("$GEMINI_PKG") ;;
  opencode) pkgs=("$OPENCODE_PKG") ;;
  all) pkgs=("$CLAUDE_PKG" "$CODEX_PKG" "$GEMINI_PKG" "$OPENCODE_PKG") ;;
  *) echo "usage: $0 [claude|codex|gemini|opencode|all]" >&2; exit 2 ;;
esac
mkdir -p "$prefix"
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "${pkgs[@]}"
for c in claude codex gemini opencode; do
  p="$("$here/bin.sh" "$c" 2>/dev/null)" && echo "$c: $p"
done
true
