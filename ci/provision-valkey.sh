#!/usr/bin/env bash
# Provision Valkey 8.1.1 from Debian trixie's packages into a private prefix, run later through
# trixie's own loader (bookworm's glibc is too old for the binary). Nothing on the system changes.
# Idempotent: a second run with the prefix in place returns at once. Prints the prefix on stdout.
set -euo pipefail

VERSION=8.1.1
. "$(dirname "${BASH_SOURCE[0]}")/lib/provision.sh"
prov_begin provision-valkey "valkey-$VERSION" valkey-server

# The machine's own Debian mirror, with the suite swapped for trixie.
prov_apt trixie
pkgs=(valkey-tools libc6 libatomic1 libjemalloc2 liblzf1 libssl3t64 libsystemd0 libcap2 libgcrypt20
      liblzma5 libzstd1 liblz4-1 libgpg-error0)
prov_download "$work/debs" "${pkgs[@]}"
tmp=$PREFIX.tmp.$$
rm -rf "$tmp"; mkdir -p "$tmp"
for d in "$work"/debs/*.deb; do dpkg-deb -x "$d" "$tmp"; done
got=$(dpkg-deb -f "$work"/debs/valkey-tools_*.deb Version)
case "$got" in 8.1.1*) ;; *) prov_die "trixie serves valkey-tools $got, expected $VERSION";; esac
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
prov_finish "$tmp"
