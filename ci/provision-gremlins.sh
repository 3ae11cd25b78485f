#!/usr/bin/env bash
# Install gremlins (github.com/go-gremlins/gremlins), which makes the Go reference's mutants for
# `make mutation`, at the pinned version through the Go module proxy, into a cache folder outside
# the repo. Idempotent; prints the binary's path. Needs go.
set -euo pipefail

VERSION=v0.6.0 # internal/mutation.GremlinsVersion
command -v go >/dev/null || { echo "provision-gremlins: go is required" >&2; exit 1; }
CACHE=${EMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/echomq-kit}
DIR=$CACHE/gremlins-$VERSION
if [ -x "$DIR/bin/gremlins" ] && [ -f "$DIR/.complete" ]; then echo "$DIR/bin/gremlins"; exit 0; fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.provision-gremlins.lock"
flock 9
if [ -x "$DIR/bin/gremlins" ] && [ -f "$DIR/.complete" ]; then echo "$DIR/bin/gremlins"; exit 0; fi
rm -rf "$DIR"; mkdir -p "$DIR/bin"
# Outside any module, so the kit's go.mod is not touched.
( cd "$DIR" && GOBIN=$DIR/bin GOFLAGS=-mod=mod go install "github.com/go-gremlins/gremlins/cmd/gremlins@$VERSION" >&2 )
"$DIR/bin/gremlins" --version >/dev/null
touch "$DIR/.complete"
echo "$DIR/bin/gremlins"
