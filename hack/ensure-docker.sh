#!/usr/bin/env bash
# ensure-docker.sh — make a Docker engine available on a fresh Debian machine.
# Installs Debian's docker.io when dockerd is missing and starts dockerd when it
# is not running (there is no systemd here). Idempotent; fails loudly.
set -euo pipefail

log() { echo "ensure-docker: $*" >&2; }

if ! command -v dockerd >/dev/null 2>&1; then
  log "dockerd missing: installing Debian's docker.io"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io >/dev/null
fi

# ensure-debootstrap: the image builder makes the real-CLI guest images' Debian base (images/base) with debootstrap
# when the engine lacks it (no container registry is reachable here).
if ! command -v debootstrap >/dev/null 2>&1 && [ ! -x /usr/sbin/debootstrap ]; then
  log "debootstrap missing: installing Debian's debootstrap"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq debootstrap >/dev/null
fi

if docker info >/dev/null 2>&1; then
  log "engine already running"
  exit 0
fi

log "starting dockerd"
mkdir -p /var/log
nohup dockerd >/var/log/aicli-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    log "engine up ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"
    exit 0
  fi
  sleep 0.5
done
log "dockerd did not come up; last log lines:"
tail -n 30 /var/log/aicli-dockerd.log >&2 || true
exit 1
