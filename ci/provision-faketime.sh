#!/usr/bin/env bash
# Provision Debian bookworm's libfaketime 0.9.10 into a private prefix, without root: the library
# C02 lease-lost-across-a-wall-step preloads into a subprocess port to set its wall clock (a clock
# set back under a running port). Like the engines, nothing on the system changes: the package is
# downloaded with a private apt state and unpacked with dpkg-deb -x. Idempotent: a second run
# returns at once. Prints the prefix on stdout; the library is "$PREFIX/lib/libfaketimeMT.so.1",
# where emq-conform looks for it (-faketime, EMQ_FAKETIME name another).
set -euo pipefail

VERSION=0.9.10
. "$(dirname "${BASH_SOURCE[0]}")/lib/provision.sh"
prov_begin provision-faketime "libfaketime-$VERSION" lib/libfaketimeMT.so.1

prov_apt bookworm
prov_download "$work/debs" libfaketime
got=$(dpkg-deb -f "$work"/debs/libfaketime_*.deb Version)
case "$got" in "$VERSION"-*) ;; *) prov_die "bookworm serves libfaketime $got, expected $VERSION";; esac
tmp=$PREFIX.tmp.$$
rm -rf "$tmp"; mkdir -p "$tmp/lib" "$work/x"
dpkg-deb -x "$work"/debs/libfaketime_*.deb "$work/x"
so=$(find "$work/x" -name libfaketimeMT.so.1 | head -1)
[ -n "$so" ] || prov_die "the package holds no libfaketimeMT.so.1"
install -m 0755 "$so" "$tmp/lib/libfaketimeMT.so.1"
# It must load into a process of this machine: date, set an hour back, says so.
want=$(( $(date +%s) - 3600 ))
seen=$(LD_PRELOAD="$tmp/lib/libfaketimeMT.so.1" FAKETIME=-3600 date +%s)
[ $(( seen - want )) -ge -5 ] && [ $(( seen - want )) -le 5 ] || prov_die "date under the library read $seen, want about $want"
prov_finish "$tmp"
