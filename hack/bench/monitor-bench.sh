#!/usr/bin/env bash
# monitor-bench.sh — the monitors' targets, each with its same-run baseline: keyword matching with 1,000 keywords vs
# bytes.Contains of one; the watch loop's own wake latency (in-process); keyword entry → trigger entry committed to
# the monitor conversation over Docker with the fake harness (steady and cold) vs the human send carrying the
# keyword; CPU added by 100 attachments over 50 conversations at ~1 MB/min vs the same supervisor without them.
# The CPU figure is printed twice: the process's getrusage, and from each window's CPU profile without the history
# index's bleve work (its segment merges come in bursts of seconds that swamp the difference between windows).
# Needs Docker. Env: MONITOR_WAKES (default 30), MONITOR_CPU_WINDOW (default 60s), MONITOR_CPU_ROUNDS (default 1).
set -euo pipefail
cd "$(dirname "$0")/../.."
hack/ensure-docker.sh
go test -run '^$' -bench Match1000Keywords -benchtime 3s ./internal/monitor/match/ | grep -E '^Benchmark'
go test -run '^$' -bench WakeLatency -benchtime 20x ./internal/monitor/ | grep -E '^Benchmark'
go test -tags e2e -count=1 -run '^$' -bench MonitorWake -benchtime "${MONITOR_WAKES:-30}x" -timeout 40m ./e2e/ | grep -E '^Benchmark'
prof=$(mktemp -d /tmp/monitor-bench.XXXXXX)
trap 'rm -rf "$prof"' EXIT
MONITOR_CPU_PROFILE=$prof go test -run '^$' -bench MonitorCPU -benchtime 1x -timeout 30m ./internal/supervisor/ |
	grep -E '^Benchmark|% of one core'
# seconds PROFILE [pprof flags…]: CPU seconds of the profile's samples.
seconds() {
	local p=$1
	shift
	go tool pprof -top -nodefraction=0 -nodecount=1000000 "$@" "$p" 2>/dev/null |
		awk '/Showing nodes accounting for/ {v = $5; sub(/,$/, "", v); if (v ~ /ms$/) {sub(/ms$/, "", v); v /= 1000} else sub(/s$/, "", v); print v}'
}
for p in "$prof"/*.pprof; do
	echo "$(basename "$p" .pprof).without_bleve $(seconds "$p" -ignore=blevesearch) cpu-s"
done
