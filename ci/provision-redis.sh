#!/usr/bin/env bash
# Provision Debian bookworm's Redis 7.0 into a private prefix, without root: a real server of the
# wrong kind, for the clauses that check a client refuses it (C01, A12). Like Valkey, nothing on
# the system changes: the packages are downloaded (apt-get download, with a private apt state),
# unpacked with dpkg-deb -x, and the server runs on the machine's own libc with the unpacked
# libraries first on LD_LIBRARY_PATH. Debian's /usr/bin/redis-server is only a symlink to
# redis-check-rdb, which is the server. Idempotent: a second run returns at once. Prints the
# prefix on stdout; the server is "$PREFIX/bin/redis-server".
set -euo pipefail

VERSION=7.0
. "$(dirname "${BASH_SOURCE[0]}")/lib/provision.sh"
prov_begin provision-redis "redis-$VERSION" bin/redis-server

# bookworm's packages (Redis 7.0 runs on bookworm's libc), from the machine's own mirror.
prov_apt bookworm
prov_download "$work/debs" redis-tools libjemalloc2 liblzf1 libatomic1
got=$(dpkg-deb -f "$work"/debs/redis-tools_*.deb Version)
case "$got" in *:7.0.*|7.0.*) ;; *) prov_die "bookworm serves redis-tools $got, expected 7.0.x";; esac
tmp=$PREFIX.tmp.$$
rm -rf "$tmp"; mkdir -p "$tmp/bin"
for d in "$work"/debs/*.deb; do dpkg-deb -x "$d" "$tmp"; done
lib=$tmp/usr/lib/x86_64-linux-gnu
missing=$(LD_LIBRARY_PATH=$lib ldd "$tmp/usr/bin/redis-check-rdb" | awk '/not found/{print $1}')
[ -z "$missing" ] || prov_die "libraries not found: $missing"
# One binary, two programs: it serves only when its name says redis-server.
ln -sf redis-check-rdb "$tmp/usr/bin/redis-server"
# The wrapper execs, so the server keeps the wrapper's PID (and its parent-death signal).
for tool in redis-server:redis-server redis-cli:redis-cli; do
  name=${tool%%:*}; bin=${tool#*:}
  cat > "$tmp/bin/$name" <<WRAP
#!/bin/sh
P=\$(dirname "\$(dirname "\$(readlink -f "\$0")")")
LD_LIBRARY_PATH="\$P/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$P/usr/bin/$bin" "\$@"
WRAP
  chmod +x "$tmp/bin/$name"
done
"$tmp/bin/redis-server" --version >&2
prov_finish "$tmp"
