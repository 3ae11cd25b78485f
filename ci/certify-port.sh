#!/usr/bin/env bash
# Certify an EchoMQ 2.0 port, as an ordinary user, in plain shell: build emq-conform from the kit,
# provision Valkey 8.1.1 and Redis 7.0 (the wrong-kind server of C01) into the cache without
# root, start both on free loopback ports, run the fourteen contracts against the port, stop the
# servers, and keep the certification folder (transcript, JUnit, JSON, report.html, badge.svg).
#
#   PORT_CMD='python3 my_port.py' bash path/to/kit/ci/certify-port.sh
#
# Environment:
#   PORT_CMD       the command that runs the port (required; split shell-like by emq-conform)
#   KIT            the kit's checkout (default: the one holding this script)
#   OUT            the certification folder (default: ./certification)
#   KNOWN_FAILING  a known-failing file (optional; see the kit's README)
#   EMQ_CACHE      where engines are cached (default: ~/.cache/echomq-kit)
# Exit status: emq-conform's (0 certified, 1 a contract failed or did not run, 2 harness error).
set -euo pipefail

: "${PORT_CMD:?set PORT_CMD to the command that runs your port}"
KIT=${KIT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
OUT=${OUT:-certification}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "certify-port: building emq-conform from $KIT" >&2
( cd "$KIT" && go build -o "$work/emq-conform" ./cmd/emq-conform )
valkey=$(bash "$KIT/ci/provision-valkey.sh")
redis=$(bash "$KIT/ci/provision-redis.sh")

# start NAME BIN: run a server on a free loopback port (a random one, retried on a bind race) and
# print the port once it accepts connections.
start() {
  local name=$1 bin=$2 port log pid
  for _ in 1 2 3 4 5; do
    port=$(( 20000 + RANDOM % 40000 ))
    log=$work/$name-$port.log
    "$bin" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
      if grep -q 'Ready to accept connections' "$log" 2>/dev/null; then
        pids+=("$pid"); echo "$port"; return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  done
  echo "certify-port: $name did not start; its log:" >&2; cat "$log" >&2
  return 1
}
# (A redirect, not $(…): start runs in this shell, so pids keeps the servers to stop.)
start valkey "$valkey/bin/valkey-server" >"$work/valkey.port"
start redis "$redis/bin/redis-server" >"$work/redis.port"
vport=$(cat "$work/valkey.port"); rport=$(cat "$work/redis.port")
echo "certify-port: Valkey on 127.0.0.1:$vport, Redis (wrong kind) on 127.0.0.1:$rport" >&2

args=(-port "$PORT_CMD" -valkey "127.0.0.1:$vport" -wrong-kind "127.0.0.1:$rport" -out "$OUT")
[ -z "${KNOWN_FAILING:-}" ] || args+=(-known-failing "$KNOWN_FAILING")
status=0
"$work/emq-conform" "${args[@]}" || status=$?
echo "certify-port: certification folder $OUT (badge: $OUT/badge.svg)" >&2
exit "$status"
