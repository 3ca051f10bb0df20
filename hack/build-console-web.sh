#!/usr/bin/env bash
# build-console-web.sh — build the consoles' front-end bundle into
# internal/console/web/dist (embedded in aicli-console by `go build`): Node and
# npm installed from Debian when missing, the packages pinned by
# package-lock.json installed with `npm ci`, then bundled with esbuild.
# Skips the work when the bundle is newer than its sources. Fails loudly.
set -euo pipefail
cd "$(dirname "$0")/../internal/console/web"

log() { echo "build-console-web: $*" >&2; }

if ! command -v npm >/dev/null 2>&1; then
  log "npm missing: installing Debian's nodejs and npm"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq nodejs npm >/dev/null
fi

if [ -f dist/console.js ] && [ -z "$(find src package.json package-lock.json -newer dist/console.js -print -quit)" ]; then
  exit 0
fi
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  log "installing the pinned packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi
npm run --silent build
log "bundle built: $(du -sh dist | cut -f1) in internal/console/web/dist"
