#!/usr/bin/env bash
# run.sh — set up this machine and run the supervisor with its embedded
# defaults, and the web consoles next to it: Docker installed and started if
# needed, the consoles' front-end bundle built (Node from Debian if missing),
# binaries built into bin/, data dir ~/.aicli (override with AICLI_DATA_DIR),
# guest images built on demand. The consoles listen on 127.0.0.1:8080
# (override with AICLI_CONSOLE_LISTEN); their URL is printed at start.
set -euo pipefail
cd "$(dirname "$0")/.."
hack/ensure-docker.sh
make_bin() {
  hack/build-console-web.sh
  mkdir -p bin
  go build -o bin/aicli-supervisor ./cmd/aicli-supervisor
  go build -o bin/aictl ./cmd/aictl
  go build -o bin/aicli-console ./cmd/aicli-console
  if [ -d cmd/aicli-guest ]; then CGO_ENABLED=0 go build -trimpath -o bin/aicli-guest ./cmd/aicli-guest; fi
  if [ -d cmd/aicli-fake-cli ]; then CGO_ENABLED=0 go build -trimpath -o bin/aicli-fake-cli ./cmd/aicli-fake-cli; fi
  if [ -d cmd/aicli-tool ]; then CGO_ENABLED=0 go build -trimpath -o bin/aicli-tool ./cmd/aicli-tool; fi
}
make_bin
data_dir="${AICLI_DATA_DIR:-$HOME/.aicli}"
echo "run.sh: supervisor starting; in another shell: export PATH=\$PWD/bin:\$PATH; aictl apply -f config/samples/" >&2
bin/aicli-supervisor --data-dir "$data_dir" --log-format text "$@" &
supervisor=$!
trap 'exit 130' INT TERM
# The console shows the supervisor as down until it serves; it prints its URL (and, at the first start, its password).
bin/aicli-console --data-dir "$data_dir/console" --supervisor "local=unix://$data_dir/supervisor.sock" \
  --listen "${AICLI_CONSOLE_LISTEN:-127.0.0.1:8080}" --log-format text &
console=$!
trap 'kill "$console" "$supervisor" 2>/dev/null || true; wait "$console" "$supervisor" 2>/dev/null || true' EXIT
wait -n "$supervisor" "$console"
