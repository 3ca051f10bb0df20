#!/usr/bin/env bash
# guest-bench.sh — the guest's benchmarks against real Docker, each with its baseline measured in the same run
# (e2e/guest_bench_test.go): container create → handshake → CLI IDLE vs `docker run` to first output; PTY
# throughput through guest → side channel → Subscribe vs a raw PTY inside the same container; SendMessage vs a
# direct PTY write; guest RSS. Prints the `go test` benchmark lines on stderr and `name value unit` lines on stdout,
# then one `check` line per target. Needs Docker (hack/ensure-docker.sh). Usage: hack/bench/guest-bench.sh [N]
# (N iterations per benchmark, default 10).
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${1:-10}"
hack/ensure-docker.sh
out=$(mktemp /tmp/guest-bench.XXXXXX)
trap 'rm -f "$out"' EXIT
if ! go test -tags e2e -count=1 -run '^$' -bench '^BenchmarkGuest' -benchtime "${n}x" -timeout 30m ./e2e/ >"$out" 2>&1; then
  cat "$out" >&2
  echo "guest-bench: benchmarks failed" >&2
  exit 1
fi
grep -E '^Benchmark' "$out" >&2
# "BenchmarkGuestX-2  N  T ns/op  v1 metric-one-unit  v2 …" → "guest-x.metric-one v1 unit" (unit: last dash field).
awk '/^BenchmarkGuest/ {
  b = $1; sub(/^BenchmarkGuest/, "", b); sub(/-[0-9]+$/, "", b); b = "guest-" tolower(b)
  for (i = 5; i < NF; i += 2) {
    k = split($(i + 1), p, "-"); unit = p[k]; name = substr($(i + 1), 1, length($(i + 1)) - length(unit) - 1)
    print b "." name, $i, unit
  }
}' "$out" | tee "$out.metrics"
# Targets (docs/benchmarks.md, supervisor–guest inversion).
awk '
  function check(name, op, target,   v, ok) {
    if (!(name in m)) { print "check", name, "missing"; return }
    v = m[name]; ok = (op == "<=" ? v <= target : op == ">=" ? v >= target : v < target)
    print "check", name, v, op, target, (ok ? "PASS" : "MISS")
  }
  { m[$1] = $2 }
  END {
    check("guest-startup.ratio-idle-vs-docker-run", "<=", 1.3)
    check("guest-startup.ratio-idle-vs-docker-run-hardened", "<=", 1.3)
    check("guest-ptythroughput.ratio-subscribe-vs-raw", ">=", 0.8)
    check("guest-sendmessage.send-message-overhead-p50", "<", 5)
    check("guest-sendmessage.guest-rss-idle-fake-cli", "<=", 15)
    check("guest-ptythroughput.guest-peak-rss", "<=", 15)
  }' "$out.metrics"
rm -f "$out.metrics"
