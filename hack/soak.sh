#!/usr/bin/env bash
# soak.sh [DURATION] — the chaos soak (default 2m): builds the binaries, runs a real aicli-supervisor on its own
# temporary data dir and socket with 20 fake-harness agents (mail among them, a granted tool each, two monitors)
# under concurrent sends, mail, tool calls and monitor wakes, while it kill -9s the supervisor, kills guests and
# containers and restarts dockerd once; then, after quiescence, checks and prints the invariants and exits non-zero
# on any violation (hack/soak/main.go). Leaves no process, container or temporary directory behind, also when
# interrupted.
#
# Env: SOAK_DOCKERD_RESTART=0 skips the dockerd restart (it kills every container on the engine, other people's
# too); SOAK_ARGS adds flags of hack/soak (e.g. "-agents 10 -fault-every 5s"); SOAK_KEEP=1 keeps the scratch
# directory (supervisor.log, soak.log, the data dir) for a post-mortem.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-2m}
hack/ensure-docker.sh

work=$(mktemp -d /tmp/aicli-soak.XXXXXX)
pid=""
cleanup() {
	local status=$?
	trap - EXIT INT TERM
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true # the soak stops its supervisor and removes its containers
		wait "$pid" 2>/dev/null || true
	fi
	# Backstop for an abrupt end: the containers of this run's supervisor, by its label.
	if [ -s "$work/data/supervisor-id" ]; then
		ids=$(docker ps -aq --filter "label=aicli.dev/supervisor=$(cat "$work/data/supervisor-id")" 2>/dev/null || true)
		if [ -n "$ids" ]; then
			# shellcheck disable=SC2086 # one id per word
			docker rm -f $ids >/dev/null 2>&1 || true
		fi
	fi
	if [ "${SOAK_KEEP:-0}" = 1 ]; then
		echo "soak: kept $work" >&2
	else
		rm -rf "$work"
	fi
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "soak: building into $work/bin" >&2
mkdir -p "$work/bin"
go build -o "$work/bin/aicli-supervisor" ./cmd/aicli-supervisor
for b in aicli-guest aicli-fake-cli aicli-tool; do
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/bin/$b" "./cmd/$b"
done
go build -o "$work/bin/soak" ./hack/soak

restart=true
[ "${SOAK_DOCKERD_RESTART:-1}" = 0 ] && restart=false
# In the background, so that a signal to this script reaches the trap at once (bash defers traps while a
# foreground command runs).
# shellcheck disable=SC2086 # SOAK_ARGS is a list of flags
"$work/bin/soak" -duration "$duration" -bin "$work/bin" -work "$work" -dockerd-restart="$restart" \
	-ensure-docker "$PWD/hack/ensure-docker.sh" ${SOAK_ARGS:-} &
pid=$!
wait "$pid"
