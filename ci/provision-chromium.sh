#!/usr/bin/env bash
# Debian's headless Chromium for the browser checks of bench.html and report.html. Without root
# or apt-get it installs nothing and says so: those checks then skip, saying why. Idempotent;
# prints the binary's path on stdout when there is one.
set -euo pipefail

for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null; then command -v "$b"; exit 0; fi
done
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "provision-chromium: no chromium and no root apt-get to install it: the browser checks will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2; then
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
fi
command -v chromium
