#!/usr/bin/env bash
# Provision Valkey 8.0.1 from bookworm-backports into a private prefix: an engine too old for the
# canon (it wants >= 8.1), for tests that check it is refused. Built for bookworm, it runs on the
# system's own libc; libraries the system lacks are downloaded from bookworm and unpacked into the
# prefix (no root), and bin/valkey-server is then a wrapper that puts them on LD_LIBRARY_PATH.
# Idempotent: a second run with the prefix in place returns at once. Prints the prefix on stdout.
set -euo pipefail

VERSION=8.0
CACHE=${EMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/echomq-kit}
PREFIX=$CACHE/valkey-$VERSION
done_already() { [ -x "$PREFIX/bin/valkey-server" ] && [ -f "$PREFIX/.complete" ]; }
if done_already; then echo "$PREFIX"; exit 0; fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.provision-valkey80.script.lock"
flock 9
if done_already; then echo "$PREFIX"; exit 0; fi

command -v apt-get >/dev/null || { echo "provision-valkey80: apt-get is required (Debian/Ubuntu)" >&2; exit 1; }
uri=""; keyring=""
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  if grep -q '^Suites:.*bookworm\b' "$f" && grep -qE '^URIs:.*/debian/?$' "$f"; then
    uri=$(awk '/^URIs:/{print $2; exit}' "$f"); keyring=$(awk '/^Signed-By:/{print $2; exit}' "$f"); break
  fi
done
if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
  uri=$(awk '$1=="deb" && $3 ~ /^bookworm$/ {print $2; exit}' /etc/apt/sources.list)
fi
[ -n "$uri" ] || { echo "provision-valkey80: no Debian bookworm source in /etc/apt" >&2; exit 1; }
[ -n "$keyring" ] || keyring=/usr/share/keyrings/debian-archive-keyring.gpg

work=$(mktemp -d "$CACHE/apt80.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
printf 'deb [signed-by=%s] %s bookworm-backports main\ndeb [signed-by=%s] %s bookworm main\n' \
  "$keyring" "$uri" "$keyring" "$uri" > "$work/sources.list"
opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "Debug::NoLocking=1")
# As root, apt would drop to the _apt user, who cannot write the private dirs.
[ "$(id -u)" != 0 ] || opts+=(-o "APT::Sandbox::User=root")
echo "provision-valkey80: fetching bookworm-backports package lists" >&2
apt-get -qq "${opts[@]}" update >&2
( cd "$work/debs" && apt-get -qq "${opts[@]}" download valkey-tools >&2 )
deb=$(ls "$work"/debs/valkey-tools_*.deb)
got=$(dpkg-deb -f "$deb" Version)
case "$got" in 8.0.*) ;; *) echo "provision-valkey80: bookworm-backports serves valkey-tools $got, expected 8.0.x" >&2; exit 1;; esac
dpkg-deb -x "$deb" "$work/x"
tmp=$PREFIX.tmp.$$
rm -rf "$tmp"; mkdir -p "$tmp/bin"
cp "$work/x/usr/bin/valkey-check-rdb" "$tmp/bin/valkey-server"
cp "$work/x/usr/bin/valkey-cli" "$tmp/bin/valkey-cli"

missing=$(ldd "$tmp/bin/valkey-server" | awk '/not found/{print $1}')
if [ -n "$missing" ]; then
  # Library sonames to bookworm package names, for the few it links.
  pkgs=()
  for so in $missing; do
    case "$so" in
      libjemalloc.so.2) pkgs+=(libjemalloc2) ;; liblzf.so.1) pkgs+=(liblzf1) ;;
      libssl.so.3|libcrypto.so.3) pkgs+=(libssl3) ;; libsystemd.so.0) pkgs+=(libsystemd0) ;;
      libatomic.so.1) pkgs+=(libatomic1) ;;
      *) echo "provision-valkey80: missing library $so" >&2; exit 1 ;;
    esac
  done
  mkdir -p "$work/libdebs"
  ( cd "$work/libdebs" && apt-get -qq "${opts[@]}" download "${pkgs[@]}" >&2 )
  for d in "$work"/libdebs/*.deb; do dpkg-deb -x "$d" "$tmp"; done
  mkdir -p "$tmp/libexec"
  mv "$tmp/bin/valkey-server" "$tmp/libexec/valkey-server"
  cat > "$tmp/bin/valkey-server" <<'WRAP'
#!/bin/sh
P=$(dirname "$(dirname "$(readlink -f "$0")")")
LD_LIBRARY_PATH="$P/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$P/libexec/valkey-server" "$@"
WRAP
  chmod +x "$tmp/bin/valkey-server"
fi
"$tmp/bin/valkey-server" --version >&2
touch "$tmp/.complete"
rm -rf "$PREFIX"; mv "$tmp" "$PREFIX"
echo "$PREFIX"
