#!/usr/bin/env bash
# all.sh runs every long benchmark (make bench) and prints "name value unit"
# lines, section by section, with the machine and date. Paste the result into
# docs/benchmarks.md. Needs Docker for the runtime and guest sections.
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go version | awk '{print $3}')"
hack/ensure-docker.sh
section() { echo; echo "## $1"; }
section store;       hack/bench/store-bench.sh
section supervisor;  go test -run '^$' -bench . -benchtime 1x ./cmd/aicli-supervisor/ | grep -E '^Benchmark'
section aictl;       go test -run '^$' -bench GetAgents1000 ./internal/aictl/... | grep -E '^Benchmark' || true
section gateway;     go test -run '^$' -bench . ./internal/gateway/ | grep -E '^Benchmark' || true
section tools;       go test -run '^$' -bench ToolCallRoundTrip -benchtime 1500x ./internal/tools/ | grep -E '^Benchmark' || true
section guest-pty;   go test -run '^$' -bench . ./guest/ptyhost/ | grep -E '^Benchmark' || true
section runtime;     hack/bench/runtime-bench.sh
if [ -x hack/bench/guest-bench.sh ]; then section guest-e2e; hack/bench/guest-bench.sh; fi
section spend;       hack/bench/spend-bench.sh
section history;     hack/bench/history-bench.sh
section monitors;    hack/bench/monitor-bench.sh
