#!/usr/bin/env bash
# test.sh — the whole test suite, as CI runs it: Docker installed and started
# when missing (its absence fails loudly), generated code checked, lint (gofmt,
# vet, import boundaries), then unit, integration and Docker e2e tests (with
# chromium installed when missing, for the browser specs), a 2-minute chaos soak
# and the real-CLI tier.
set -euo pipefail
cd "$(dirname "$0")/.."
hack/ensure-docker.sh
docker info >/dev/null 2>&1 || { echo "test.sh: Docker engine unreachable after ensure-docker.sh" >&2; exit 1; }
echo "== consoles' front-end bundle (embedded by go build)"
hack/build-console-web.sh
echo "== verify generated code"
go tool -modfile=hack/tools/go.mod controller-gen object paths=./apis/...
go tool -modfile=hack/tools/go.mod controller-gen crd paths=./apis/... output:crd:artifacts:config=config/crd/bases
if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && ! git diff --quiet -- apis config/crd; then
  git diff --stat -- apis config/crd
  echo "test.sh: generated files are stale: run 'make generate manifests'" >&2
  exit 1
fi
echo "== lint: gofmt, vet, import boundaries"
if ! command -v make >/dev/null 2>&1; then
  echo "test.sh: make missing: installing Debian's make" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq make >/dev/null
fi
make lint
echo "== unit and integration tests"
go test -count=1 -timeout 20m ./...
echo "== Docker e2e"
hack/ensure-chromium.sh # the consoles' browser specs (label "browser") drive headless chromium
go test -tags e2e -count=1 -timeout 5m -run '^TestDocker' ./internal/gateway/ ./internal/imagebuild/
go test -tags e2e -count=1 -timeout 30m ./e2e/ -ginkgo.label-filter='!real-cli'
echo "== chaos soak (2 minutes: kill -9s, guest and container kills, one dockerd restart; invariants checked)"
hack/soak.sh 2m
echo "== real-CLI tier"
# Claude Code, Codex, Gemini CLI and OpenCode in their guest images (built on first use from
# the pinned npm packages; each image is kept, its build intermediates removed) against the test's fake provider.
go test -tags 'e2e realcli' -count=1 -timeout 40m ./e2e/ -ginkgo.label-filter=real-cli

