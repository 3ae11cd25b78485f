#!/usr/bin/env bash
# Provision Valkey 8.1.1 from Debian trixie's packages into a private prefix, run later through
# trixie's own loader (bookworm's glibc is too old for the binary). Nothing on the system changes.
# Idempotent: a second run with the prefix in place returns at once. Prints the prefix on stdout.
set -euo pipefail

VERSION=8.1.1
CACHE=${EMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/echomq-kit}
PREFIX=$CACHE/valkey-$VERSION
if [ -x "$PREFIX/valkey-server" ] && [ -f "$PREFIX/.complete" ]; then
  echo "$PREFIX"; exit 0
fi
mkdir -p "$CACHE"
# Parallel runs: one provisions, the others wait and then find the prefix complete.
exec 9>"$CACHE/.provision-valkey.script.lock"
flock 9
if [ -x "$PREFIX/valkey-server" ] && [ -f "$PREFIX/.complete" ]; then
  echo "$PREFIX"; exit 0
fi

command -v apt-get >/dev/null || { echo "provision-valkey: apt-get is required (Debian/Ubuntu)" >&2; exit 1; }
command -v dpkg-deb >/dev/null || { echo "provision-valkey: dpkg-deb is required" >&2; exit 1; }

# The machine's own Debian mirror and keyring, with the suite swapped for trixie.
uri=""; keyring=""
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  if grep -q '^Suites:.*bookworm\b' "$f" && grep -qE '^URIs:.*/debian/?$' "$f"; then
    uri=$(awk '/^URIs:/{print $2; exit}' "$f")
    keyring=$(awk '/^Signed-By:/{print $2; exit}' "$f")
    break
  fi
done
if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
  uri=$(awk '$1=="deb" && $3 ~ /^bookworm$/ {print $2; exit}' /etc/apt/sources.list)
fi
[ -n "$uri" ] || { echo "provision-valkey: no Debian bookworm source found in /etc/apt to derive a trixie mirror from" >&2; exit 1; }
[ -n "$keyring" ] || keyring=/usr/share/keyrings/debian-archive-keyring.gpg

work=$(mktemp -d "$CACHE.apt.XXXXXX" 2>/dev/null || { mkdir -p "$CACHE"; mktemp -d "$CACHE/apt.XXXXXX"; })
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs" "$CACHE"
echo "deb [signed-by=$keyring] $uri trixie main" > "$work/sources.list"
opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "Debug::NoLocking=1"
      -o "APT::Sandbox::User=root")
echo "provision-valkey: fetching trixie package lists" >&2
apt-get -qq "${opts[@]}" update >&2
pkgs=(valkey-tools libc6 libatomic1 libjemalloc2 liblzf1 libssl3t64 libsystemd0 libcap2 libgcrypt20
      liblzma5 libzstd1 liblz4-1 libgpg-error0)
( cd "$work/debs" && apt-get -qq "${opts[@]}" download "${pkgs[@]}" >&2 )
tmp=$PREFIX.tmp.$$
rm -rf "$tmp"; mkdir -p "$tmp"
for d in "$work"/debs/*.deb; do dpkg-deb -x "$d" "$tmp"; done
got=$(dpkg-deb -f "$work"/debs/valkey-tools_*.deb Version)
case "$got" in 8.1.1*) ;; *) echo "provision-valkey: trixie serves valkey-tools $got, expected $VERSION" >&2; exit 1;; esac
cp "$tmp/usr/bin/valkey-check-rdb" "$tmp/valkey-server"
for tool in valkey-cli valkey-benchmark; do
  [ -e "$tmp/usr/bin/$tool" ] && ln -sf "usr/bin/$tool" "$tmp/$tool"
done
# Wrappers that run each binary through trixie's loader, for people poking at the engine.
mkdir -p "$tmp/bin"
for tool in valkey-server valkey-cli valkey-benchmark; do
  target=$tmp/$tool; [ "$tool" = valkey-server ] || target=$tmp/usr/bin/$tool
  [ -e "$target" ] || continue
  cat > "$tmp/bin/$tool" <<WRAP
#!/bin/sh
P=\$(dirname "\$(dirname "\$(readlink -f "\$0")")")
exec "\$P/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "\$P/usr/lib/x86_64-linux-gnu" "\$P/$( [ "$tool" = valkey-server ] && echo valkey-server || echo usr/bin/$tool )" "\$@"
WRAP
  chmod +x "$tmp/bin/$tool"
done
"$tmp/bin/valkey-server" --version >&2
touch "$tmp/.complete"
rm -rf "$PREFIX"; mv "$tmp" "$PREFIX"
echo "$PREFIX"
