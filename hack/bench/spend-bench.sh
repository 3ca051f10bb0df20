#!/usr/bin/env bash
# spend-bench.sh — spend full-scan throughput and peak RSS against ccusage's native binary on generated ~1 GB trees
# per harness, plus the incremental costs (second call, 1 MB / 8 MB appends). Run by `make bench`, not by the tests.
# Env: SPEND_BENCH_MB (default 1024) per harness, SPEND_BENCH_RUNS (default 3, best run counts).
set -euo pipefail
cd "$(dirname "$0")/../.."
MB=${SPEND_BENCH_MB:-1024}
RUNS=${SPEND_BENCH_RUNS:-3}
command -v /usr/bin/time >/dev/null || { echo "spend-bench: /usr/bin/time is required (apt-get install time)" >&2; exit 1; }
work=$(mktemp -d /tmp/spend-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "== building"
go build -o "$work/gentree" ./hack/spend/gentree
go build -o "$work/spendlocal" ./hack/spend/spendlocal
go build -o "$work/spendbench" ./hack/spend/spendbench
# The comparison test installs the pinned ccusage when missing; reuse it here.
go test -count=1 -run 'TestMatchesCCUsageOnRuleTree' ./hack/spend/compare/ >/dev/null
CCUSAGE=$(ls hack/spend/.ccusage/node_modules/@ccusage/ccusage-linux-*/bin/ccusage | head -1)
echo "== generating ${MB} MB per harness in $work"
"$work/gentree" -out "$work/tree" -mb "$MB"
mkdir -p "$work/home" "$work/none"
bytes() { du -sb "$1" | cut -f1; }

# best_of CMD... : runs RUNS times, prints "seconds maxrss_kb" of the fastest run
best_of() {
  local best_t="" best_m=""
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null
    read -r t m <"$work/time"
    if [ -z "$best_t" ] || awk "BEGIN{exit !($t < $best_t)}"; then best_t=$t; best_m=$m; fi
  done
  echo "$best_t $best_m"
}

echo "machine: $(nproc) cores, $(date -u +%FT%TZ), $(go version | cut -d' ' -f3)"
for h in claude codex; do
  tree="$work/tree/$h"
  size=$(bytes "$tree")
  cat $(find "$tree" -name '*.jsonl') >/dev/null # warm the page cache for both tools
  read -r ct cm < <(best_of env HOME="$work/home" CLAUDE_CONFIG_DIR="$work/tree/claude" CODEX_HOME="$work/tree/codex" \
    "$CCUSAGE" "$h" daily --json --offline -z UTC)
  if [ "$h" = claude ]; then dirs=(--claude-dir "$tree" --codex-dir "$work/none"); else dirs=(--claude-dir "$work/none" --codex-dir "$tree"); fi
  runs=0
  ours() { runs=$((runs+1)); "$work/spendlocal" --local --offline -o json --since 2000-01-01 "${dirs[@]}" --data-dir "$work/data-$h-$runs-$RANDOM"; }
  read -r ot om < <(best_of bash -c "$(declare -f ours); work=$work; dirs=(${dirs[*]}); ours")
  "$work/spendlocal" --local --offline -o json --since 2000-01-01 "${dirs[@]}" --data-dir "$work/data-second-$h" >/dev/null
  read -r st sm < <(best_of "$work/spendlocal" --local --offline -o json --since 2000-01-01 "${dirs[@]}" --data-dir "$work/data-second-$h" )
  awk -v h="$h" -v size="$size" -v ct="$ct" -v cm="$cm" -v ot="$ot" -v om="$om" -v st="$st" 'BEGIN{
    printf "%s: %.0f MB  ccusage %.2fs (%.2f GB/s, %d MB RSS)  spend %.2fs (%.2f GB/s, %d MB RSS)  throughput ratio %.2fx  RSS ratio %.2f\n",
      h, size/1048576, ct, size/ct/1e9, cm/1024, ot, size/ot/1e9, om/1024, ct/ot, om/cm;
    printf "%s: CLI second call on the unchanged tree (new process, index reload): %.3fs\n", h, st }'
  echo "$h incremental (in-process, ms): $("$work/spendbench" -harness "$h" -root "$tree" -data "$work/bench-$h")"
done
