#!/usr/bin/env bash
# Install Debian's Redis 7.0 (/usr/bin/redis-server): a real server of the wrong kind, for tests
# that check a client refuses it. Only the binary is used; the package's own service must not
# keep running on 6379. Idempotent; prints the binary's path on stdout.
set -euo pipefail

BIN=/usr/bin/redis-server
if [ -x "$BIN" ]; then echo "$BIN"; exit 0; fi
command -v apt-get >/dev/null || { echo "provision-redis: apt-get is required (Debian/Ubuntu)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "provision-redis: run as root (apt-get install redis-server)" >&2; exit 1; }

# The package would start its service on 6379; forbid service starts for the install (unless the
# machine already forbids them, as container images do).
policy=/usr/sbin/policy-rc.d
added=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; added=1
fi
cleanup() { [ -z "$added" ] || rm -f "$policy"; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq --no-install-recommends redis-server >&2; then
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends redis-server >&2
fi

# Belt and braces: if a service manager started it anyway, stop and disable it.
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
  systemctl disable --now redis-server >/dev/null 2>&1 || true
elif [ -x /etc/init.d/redis-server ]; then
  /etc/init.d/redis-server stop >/dev/null 2>&1 || true
  command -v update-rc.d >/dev/null && update-rc.d redis-server disable >/dev/null 2>&1 || true
fi

"$BIN" --version >&2
echo "$BIN"
