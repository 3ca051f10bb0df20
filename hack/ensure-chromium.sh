#!/usr/bin/env bash
# ensure-chromium.sh — make a headless browser available for the consoles' browser tests (e2e label "browser").
# Installs Debian's chromium when it is missing, then proves it renders a page headless. Idempotent; fails loudly.
set -euo pipefail

log() { echo "ensure-chromium: $*" >&2; }

if ! command -v chromium >/dev/null 2>&1; then
  log "chromium missing: installing Debian's chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # fonts-liberation: screenshots need real Latin fonts (it is only a recommendation of chromium).
  apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
fi

# Smoke test: render a page the way the tests run chromium (headless, no sandbox: the suite runs as root).
errlog=$(mktemp)
trap 'rm -f "$errlog"' EXIT
if ! dom=$(timeout 60 chromium --headless --no-sandbox --disable-gpu --dump-dom 'data:text/html,<p>chromium-ok</p>' 2>"$errlog") ||
  [[ "$dom" != *chromium-ok* ]]; then
  log "chromium is installed but cannot render a page headless; its stderr:"
  tail -n 30 "$errlog" >&2
  exit 1
fi
log "ready ($(chromium --version 2>/dev/null))"
