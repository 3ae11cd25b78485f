#!/usr/bin/env bash
# Install the bench's BullMQ client (bench/bullmq/package.json, pinned by its package-lock.json)
# into a cache folder outside the repo, keyed by the lock file's hash, with npm ci. Idempotent;
# prints the folder holding node_modules on stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/bench/bullmq
command -v npm >/dev/null || { echo "provision-bullmq: npm is required" >&2; exit 1; }
CACHE=${EMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/echomq-kit}
key=$(cat "$src/package.json" "$src/package-lock.json" | sha1sum | cut -c1-12)
DIR=$CACHE/bullmq-$key
if [ -f "$DIR/.complete" ]; then echo "$DIR"; exit 0; fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.provision-bullmq.lock"
flock 9
if [ -f "$DIR/.complete" ]; then echo "$DIR"; exit 0; fi
tmp=$DIR.tmp.$$
rm -rf "$tmp"; mkdir -p "$tmp"
cp "$src/package.json" "$src/package-lock.json" "$tmp/"
# --ignore-scripts: msgpackr's optional native addon is not built; BullMQ falls back to plain JS.
( cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2 )
touch "$tmp/.complete"
rm -rf "$DIR"; mv "$tmp" "$DIR"
echo "$DIR"
