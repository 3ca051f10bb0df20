#!/usr/bin/env bash
# history-bench.sh — transcript history index: search latency over 100k and 1M entries (with same-run baselines:
# bleve alone and a linear scan in memory) and indexing throughput. Run by `make bench`, not by the tests.
# The corpora are built once and cached under $TMPDIR/aicli-history-bench-* (the 1M one takes minutes; delete the
# directories to rebuild). Env: HISTORY_BENCH_SEARCHES (default 400) searches per corpus.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${HISTORY_BENCH_SEARCHES:-400}
go test -run '^$' -bench 'HistoryIndex' -benchtime 3x ./internal/history/ | grep -E '^Benchmark'
AICLI_BENCH_1M=1 go test -run '^$' -bench 'HistorySearch' -benchtime "${N}x" -timeout 30m ./internal/history/ | grep -E '^Benchmark'
