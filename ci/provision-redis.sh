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
CACHE=${EMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/echomq-kit}
PREFIX=$CACHE/redis-$VERSION
done_already() { [ -x "$PREFIX/bin/redis-server" ] && [ -f "$PREFIX/.complete" ]; }
if done_already; then echo "$PREFIX"; exit 0; fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.provision-redis.script.lock"
flock 9
if done_already; then echo "$PREFIX"; exit 0; fi

command -v apt-get >/dev/null || { echo "provision-redis: apt-get is required (Debian/Ubuntu)" >&2; exit 1; }
command -v dpkg-deb >/dev/null || { echo "provision-redis: dpkg-deb is required" >&2; exit 1; }

# The machine's own Debian mirror and keyring, suite bookworm (Redis 7.0 runs on bookworm's libc).
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
[ -n "$uri" ] || { echo "provision-redis: no Debian bookworm source in /etc/apt" >&2; exit 1; }
[ -n "$keyring" ] || keyring=/usr/share/keyrings/debian-archive-keyring.gpg

work=$(mktemp -d "$CACHE/apt-redis.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
echo "deb [signed-by=$keyring] $uri bookworm main" > "$work/sources.list"
opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "Debug::NoLocking=1")
# As root, apt would drop to the _apt user, who cannot write the private dirs.
[ "$(id -u)" != 0 ] || opts+=(-o "APT::Sandbox::User=root")
echo "provision-redis: fetching bookworm package lists" >&2
apt-get -qq "${opts[@]}" update >&2
( cd "$work/debs" && apt-get -qq "${opts[@]}" download redis-tools libjemalloc2 liblzf1 libatomic1 >&2 )
got=$(dpkg-deb -f "$work"/debs/redis-tools_*.deb Version)
case "$got" in *:7.0.*|7.0.*) ;; *) echo "provision-redis: bookworm serves redis-tools $got, expected 7.0.x" >&2; exit 1;; esac
tmp=$PREFIX.tmp.$$
rm -rf "$tmp"; mkdir -p "$tmp/bin"
for d in "$work"/debs/*.deb; do dpkg-deb -x "$d" "$tmp"; done
lib=$tmp/usr/lib/x86_64-linux-gnu
missing=$(LD_LIBRARY_PATH=$lib ldd "$tmp/usr/bin/redis-check-rdb" | awk '/not found/{print $1}')
[ -z "$missing" ] || { echo "provision-redis: libraries not found: $missing" >&2; exit 1; }
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
touch "$tmp/.complete"
rm -rf "$PREFIX"; mv "$tmp" "$PREFIX"
echo "$PREFIX"
