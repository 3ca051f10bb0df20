#!/usr/bin/env bash
# store-bench.sh runs the event-store benchmarks (internal/store) and prints
# one "name value unit" line per result.
#
# The raw-pebble baseline and the store's Create throughput are measured in
# alternating rounds in the same run (the machine is shared, so rates drift);
# the medians and their ratio are printed, and, less sensitive to drift
# between rounds, the median of the per-round ratios and of the per-round
# CPU-time ratios (raw CPU per write / store CPU per write). Each round
# also runs the informational BenchmarkRawPebbleLayout64 (raw pebble writing
# the two keys the store writes per Create as one synced batch), which separates
# what the key layout costs in pebble from what the store's code costs.
# Env: ROUNDS (default 5), BENCHTIME (default 3s) for the throughput runs.
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=${ROUNDS:-5}
benchtime=${BENCHTIME:-3s}
pkg=./internal/store/
bin=$(mktemp -d)/store.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
go test -c -o "$bin" "$pkg"

# run BENCH-REGEX BENCHTIME: prints the raw benchmark lines.
run() {
	(cd internal/store && "$bin" -test.run '^$' -test.bench "$1" -test.benchtime "$2" -test.count 1 2>/dev/null) |
		grep -E '^Benchmark' || true
}

# metric LINES UNIT: the value before UNIT on a benchmark line.
metric() {
	awk -v u="$2" '{for (i = 2; i <= NF; i++) if ($i == u) print $(i-1)}' <<<"$1"
}

median() { sort -g | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]}'; }

echo "loadavg.start $(cut -d' ' -f1 /proc/loadavg) load"
raw_rates=()
store_rates=()
pair_ratios=()
cpu_ratios=()
layout_ratios=()
for ((r = 1; r <= rounds; r++)); do
	raw=$(run '^BenchmarkRawPebbleSync64$' "$benchtime")
	lay=$(run '^BenchmarkRawPebbleLayout64$' "$benchtime")
	st=$(run '^BenchmarkStoreCreate64$' "$benchtime")
	raw_rates+=("$(metric "$raw" writes/s)")
	store_rates+=("$(metric "$st" writes/s)")
	echo "round$r.raw_pebble_sync64 $(metric "$raw" writes/s) writes/s"
	echo "round$r.raw_pebble_sync64.fsync $(metric "$raw" fsync-ms) ms"
	echo "round$r.raw_pebble_sync64.writes_per_fsync $(metric "$raw" writes/fsync) writes"
	echo "round$r.raw_pebble_sync64.cpu $(metric "$raw" cpu-us/write) us/write"
	echo "round$r.store_create64 $(metric "$st" writes/s) writes/s"
	echo "round$r.store_create64.fsync $(metric "$st" fsync-ms) ms"
	echo "round$r.store_create64.writes_per_fsync $(metric "$st" writes/fsync) writes"
	echo "round$r.store_create64.cpu $(metric "$st" cpu-us/write) us/write"
	pair_ratios+=("$(awk -v s="$(metric "$st" writes/s)" -v r="$(metric "$raw" writes/s)" 'BEGIN {printf "%.3f", (r > 0 ? s / r : 0)}')")
	cpu_ratios+=("$(awk -v s="$(metric "$st" cpu-us/write)" -v r="$(metric "$raw" cpu-us/write)" 'BEGIN {printf "%.3f", (s > 0 ? r / s : 0)}')")
	echo "round$r.store_vs_raw.ratio ${pair_ratios[-1]} ratio"
	echo "round$r.store_vs_raw.cpu_ratio ${cpu_ratios[-1]} ratio"
	echo "round$r.raw_pebble_layout64 $(metric "$lay" writes/s) writes/s"
	echo "round$r.raw_pebble_layout64.cpu $(metric "$lay" cpu-us/write) us/write"
	layout_ratios+=("$(awk -v s="$(metric "$st" writes/s)" -v r="$(metric "$lay" writes/s)" 'BEGIN {printf "%.3f", (r > 0 ? s / r : 0)}')")
	echo "round$r.store_vs_layout.ratio ${layout_ratios[-1]} ratio"
done
raw_med=$(printf '%s\n' "${raw_rates[@]}" | median)
store_med=$(printf '%s\n' "${store_rates[@]}" | median)
echo "raw_pebble_sync64.median $raw_med writes/s"
echo "store_create64.median $store_med writes/s"
awk -v s="$store_med" -v r="$raw_med" 'BEGIN {printf "store_vs_raw.ratio %.3f ratio\n", (r > 0 ? s / r : 0)}'
echo "store_vs_raw.paired_median $(printf '%s\n' "${pair_ratios[@]}" | median) ratio"
echo "store_vs_raw.cpu_ratio_median $(printf '%s\n' "${cpu_ratios[@]}" | median) ratio"
echo "store_vs_layout.paired_median $(printf '%s\n' "${layout_ratios[@]}" | median) ratio"

fan=$(run '^BenchmarkWatchFanout100$' 2000x)
echo "watch_fanout100.p50 $(metric "$fan" p50-ms) ms"
echo "watch_fanout100.p99 $(metric "$fan" p99-ms) ms"

open=$(run '^BenchmarkOpen100k$' 5x)
echo "open100k.open_list_get $(metric "$open" ms/open) ms"

list=$(run '^BenchmarkList1000$' 200x)
echo "list1000.list_and_marshal $(metric "$list" ms/list) ms"
echo "loadavg.1m $(cut -d' ' -f1 /proc/loadavg) load"
