#!/usr/bin/env bash
# run.sh — set up this machine and run the supervisor with its embedded
# defaults: Docker installed and started if needed, binaries built into bin/,
# data dir ~/.aicli (override with AICLI_DATA_DIR), guest images built on demand.
set -euo pipefail
cd "$(dirname "$0")/.."
hack/ensure-docker.sh
make_bin() {
  mkdir -p bin
  go build -o bin/aicli-supervisor ./cmd/aicli-supervisor
  go build -o bin/aictl ./cmd/aictl
  if [ -d cmd/aicli-guest ]; then CGO_ENABLED=0 go build -trimpath -o bin/aicli-guest ./cmd/aicli-guest; fi
  if [ -d cmd/aicli-fake-cli ]; then CGO_ENABLED=0 go build -trimpath -o bin/aicli-fake-cli ./cmd/aicli-fake-cli; fi
  if [ -d cmd/aicli-tool ]; then CGO_ENABLED=0 go build -trimpath -o bin/aicli-tool ./cmd/aicli-tool; fi
}
make_bin
echo "run.sh: supervisor starting; in another shell: export PATH=\$PWD/bin:\$PATH; aictl apply -f config/samples/" >&2
exec bin/aicli-supervisor --data-dir "${AICLI_DATA_DIR:-$HOME/.aicli}" --log-format text "$@"
