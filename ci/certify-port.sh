#!/usr/bin/env bash
# Certify an EchoMQ 2.0 port, as an ordinary user, in plain shell: build emq-conform from the kit,
# provision every server a certification needs into the cache without root — Valkey 8.1.1 (the
# server under test, one per parallel lane), Redis 7.0 (the wrong-kind server C01 must refuse),
# Valkey 8.0.1 (too old: refused) and a Valkey 8.1.1 started with --cluster-enabled yes (a
# cluster node: refused by a port not in cluster mode) and one started with HELLO renamed away (a
# server that rejects HELLO: refused), and libfaketime (preloaded into the port in the one clause
# that sets its wall clock) — start the servers on free loopback ports, run
# the fourteen contracts against the port, stop the servers, and keep the certification folder
# (transcript, JUnit, JSON, report.html, badge.svg).
#
#   PORT_CMD='python3 my_port.py' bash path/to/kit/ci/certify-port.sh
#
# Environment:
#   PORT_CMD       the command that runs the port (required; emq-conform splits it shell-like
#                  itself: it is never re-parsed by a shell here)
#   KIT            the kit's checkout (default: the one holding this script); emq-conform and
#                  emq-engines are built into its bin/
#   KIT_VERSION    if set, the kit version emq-conform must report (emq-conform -version): a
#                  workflow pins the kit it certifies with
#   OUT            the certification folder (default: ./certification)
#   PARALLEL       clauses run on this many Valkeys at once (default: ten per core, at most 24,
#                  as emq-conform chooses; 1: one at a time)
#   KNOWN_FAILING  a known-failing file (optional; see the kit's README)
#   KNOWN_FLAKY    a known-flaky file (optional; see the kit's README)
#   EMQ_CACHE      where engines are cached (default: ~/.cache/echomq-kit)
# Exit status: emq-conform's (0 certified, 1 a contract failed or did not run, 2 harness error).
set -euo pipefail

: "${PORT_CMD:?set PORT_CMD to the command that runs your port}"
KIT=$(cd "${KIT:-$(dirname "${BASH_SOURCE[0]}")/..}" && pwd)
OUT=${OUT:-certification}
PARALLEL=${PARALLEL:-$(( 10 * $(nproc) > 24 ? 24 : 10 * $(nproc) ))}
work=$(mktemp -d "${TMPDIR:-/tmp}/emq-certify.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# emq-conform and emq-engines go to the kit's bin/ and stay there: the replay line a failed run
# prints ($KIT/bin/emq-conform -port … -focus …) runs as printed, emq-engines beside it starting
# the servers from the cache this script filled.
echo "certify-port: building emq-conform and emq-engines from $KIT into $KIT/bin" >&2
( cd "$KIT" && go build -o bin/ ./cmd/emq-conform ./cmd/emq-engines )
conform=$KIT/bin/emq-conform
if [ -n "${KIT_VERSION:-}" ]; then
  got=$("$conform" -version)
  case "$got" in "emq-conform $KIT_VERSION "*) ;; *) echo "certify-port: KIT_VERSION=$KIT_VERSION, but the kit at $KIT is: $got" >&2; exit 2;; esac
fi
valkey=$(bash "$KIT/ci/provision-valkey.sh")
redis=$(bash "$KIT/ci/provision-redis.sh")
valkey80=$(bash "$KIT/ci/provision-valkey80.sh")
# libfaketime, for the clause that sets the port's wall clock; without it that clause is NOT RUN
# (not offered), which the certification says, and the rest runs.
faketime=none
if ft=$(bash "$KIT/ci/provision-faketime.sh"); then faketime=$ft/lib/libfaketimeMT.so.1
else echo "certify-port: no libfaketime: C02 lease-lost-across-a-wall-step will be NOT RUN (not offered)" >&2; fi

# start NAME BIN ARG…: run a server on a free loopback port (a random one, retried on a bind
# race) and print the port once it accepts connections.
start() {
  local name=$1 bin=$2 port log pid; shift 2
  for _ in 1 2 3 4 5; do
    port=$(( 20000 + RANDOM % 40000 ))
    log=$work/$name-$port.log
    "$bin" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --dir "$work" "$@" >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 200); do
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
# (Redirects, not $(…): start runs in this shell, so pids keeps the servers to stop.)
valkeys=()
# DEBUG from loopback: C01 reloads the dataset under the port (DEBUG RELOAD), so its redials meet LOADING.
for i in $(seq "$PARALLEL"); do
  start "valkey$i" "$valkey/bin/valkey-server" --enable-debug-command local >"$work/port"; valkeys+=("127.0.0.1:$(cat "$work/port")")
done
start redis "$redis/bin/redis-server" >"$work/port"; wrong=127.0.0.1:$(cat "$work/port")
start valkey80 "$valkey80/bin/valkey-server" >"$work/port"; old=127.0.0.1:$(cat "$work/port")
start cluster-node "$valkey/bin/valkey-server" --cluster-enabled yes --cluster-config-file "$work/nodes.conf" >"$work/port"
node=127.0.0.1:$(cat "$work/port")
start no-hello "$valkey/bin/valkey-server" --rename-command HELLO "" >"$work/port"; nohello=127.0.0.1:$(cat "$work/port")
all=$(IFS=,; echo "${valkeys[*]}")
echo "certify-port: Valkey 8.1 on $all; Redis 7 on $wrong, Valkey 8.0 on $old, a cluster node on $node, a Valkey that rejects HELLO on $nohello" >&2

args=(-port "$PORT_CMD" -valkey "$all" -parallel "$PARALLEL" -wrong-kind "$wrong" -valkey80 "$old" -cluster-node "$node" -no-hello "$nohello" -faketime "$faketime" -out "$OUT")
[ -z "${KNOWN_FAILING:-}" ] || args+=(-known-failing "$KNOWN_FAILING")
[ -z "${KNOWN_FLAKY:-}" ] || args+=(-known-flaky "$KNOWN_FLAKY")
status=0
"$conform" "${args[@]}" || status=$?
echo "certify-port: certification folder $OUT (badge: $OUT/badge.svg)" >&2
exit "$status"
