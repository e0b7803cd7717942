#!/usr/bin/env bash
# Installs the system services the integration tests start privately (redis-server, prometheus).
# Only acts when a binary is missing and we are root; otherwise tests skip (or fail under
# SLUICEWAY_REQUIRE_SERVICES=1).
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "missing system packages: ${missing[*]} (not root: tests needing them will skip)" >&2
  exit 0
fi
echo "installing system packages: ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
