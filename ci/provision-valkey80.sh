#!/usr/bin/env bash
# Provision Valkey 8.0.1 from bookworm-backports into a private prefix: an engine too old for the
# canon (it wants >= 8.1), for tests that check it is refused. Built for bookworm, it runs on the
# system's own libc; libraries the system lacks are downloaded from bookworm and unpacked into the
# prefix (no root), and bin/valkey-server is then a wrapper that puts them on LD_LIBRARY_PATH.
# Idempotent: a second run with the prefix in place returns at once. Prints the prefix on stdout.
set -euo pipefail

VERSION=8.0
. "$(dirname "${BASH_SOURCE[0]}")/lib/provision.sh"
prov_begin provision-valkey80 "valkey-$VERSION" bin/valkey-server

prov_apt bookworm-backports bookworm
prov_download "$work/debs" valkey-tools
deb=$(ls "$work"/debs/valkey-tools_*.deb)
got=$(dpkg-deb -f "$deb" Version)
case "$got" in 8.0.*) ;; *) prov_die "bookworm-backports serves valkey-tools $got, expected 8.0.x";; esac
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
      *) prov_die "missing library $so" ;;
    esac
  done
  prov_download "$work/libdebs" "${pkgs[@]}"
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
prov_finish "$tmp"
