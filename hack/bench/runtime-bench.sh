#!/usr/bin/env bash
# runtime-bench.sh — container start latency on this host: `docker run` of the probe and fake guest images to
# their first output (baseline) versus the supervisor's path (runtime Create → attach → Start → first output).
# Builds the images on demand; needs Docker (hack/ensure-docker.sh). Usage: hack/bench/runtime-bench.sh [N]
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${1:-30}"
hack/ensure-docker.sh
exec go test -tags e2e -count=1 -run '^$' -bench 'FirstOutput' -benchtime "${n}x" ./e2e/
